"""Judge the golden set where it is broken: which (query, document) pairs to judge first, a crash-safe journal of
the judgements, exports, and the metrics recomputed with them.

Most golden sets are sparse or missing; a metric over unjudged documents counts every one of them as non-relevant.
This module closes the holes that matter first:

- :func:`judge_queue`: the unjudged documents in the top k of every run, ordered by how likely each is a missed
  relevant document (label-gap near-duplicates first, then a documented agreement score). Works with no golden set
  at all: the candidates then come from BM25, dense and hybrid search over every query with a text.
- :class:`Journal`: one JSON line per judgement, appended and fsynced at once, never rewritten; a crash loses at
  most the line being written, and reading ignores such a torn line (counted).
- :func:`merge`, :func:`write_trec_qrels`, :func:`write_beir_qrels`: the golden set with the new judgements.
- :func:`with_judgements`, :func:`judgement_effect`: the same analysis over the merged golden set, and what changed
  ("nDCG@10 0.612 -> 0.655 after 40 judgements, 6 failures were label gaps").

Grades are integers 0-3 (0 = not relevant, > 0 = relevant, trec_eval's relevance level 1), or ``"skip"`` (the judge
could not tell: the pair leaves the queue and the golden set does not change).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from diagnose.data import DataError, Dataset, Qrels, Run, ValidationReport

if TYPE_CHECKING:
    from diagnose.analysis import Analysis
    from diagnose.space import VectorSpace

PathLike = str | Path

GRADES = (0, 1, 2, 3)
SKIP = "skip"
JOURNAL_ENV = "DIAGNOSE_JOURNAL"
JOURNAL_NAME = "judgements.jsonl"
QUEUE_COLUMNS = [
    "priority", "query_id", "doc_id", "reason", "score", "near_duplicate", "runs", "retrieved_by", "bm25_rank",
    "dense_rank", "max_cos_to_relevant", "closest_relevant",
]  # fmt: skip


def _param_error(param: str, message: str) -> DataError:
    return DataError(message, param=param)


# ============================================================================================== the queue


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
        wanted = list(dict.fromkeys([*golden, *ds.qrels.query_ids(), *(q for r in user_runs.values()
                                                                       for q in r.query_ids())]))  # fmt: skip
    else:
        wanted = list(texts)
    with_text = [q for q in wanted if str(texts.get(q, "")).strip()]
    left_out = [q for q in wanted if q not in set(with_text)]
    if left_out:
        ds.report.add(
            "judge_query_without_text",
            f"{len(left_out)} quer{'y' if len(left_out) == 1 else 'ies'} to judge {'has' if len(left_out) == 1 else 'have'}"
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
    from diagnose import embed
    from diagnose.space import VectorSpace

    ds = analysis.dataset
    emb = analysis._embeddings  # the constructor's embeddings= (precomputed vectors), None when encoded here
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
            space.model, list(space.doc_ids), space.doc_vecs, [*space.query_ids, *extra],
            np.vstack([space.query_vecs, vecs]),
        )  # fmt: skip
    if isinstance(emb, Mapping):
        return VectorSpace.build(
            ds, qids, doc_embeddings=emb.get("doc"), query_embeddings=emb.get("query"), doc_ids=emb.get("doc_ids"),
            query_ids_file=emb.get("query_ids"), report=ds.report,
        )  # fmt: skip
    if emb is not None:  # a VectorSpace given whole
        return emb
    return VectorSpace.build(
        ds, qids, encoder=analysis.encoder, cache_dir=analysis.cache_dir, report=ds.report
    )


def _probe_runs(analysis: Analysis, qids: list[str], space: VectorSpace) -> dict[str, Run]:
    """BM25, exact dense and hybrid (RRF k=60) top-``depth`` runs over ``qids``, like the analysis' baselines."""
    from diagnose import baselines as bl

    ds = analysis.dataset
    bm25 = bl.bm25_run(
        ds.corpus, ds.queries, qids, depth=analysis.depth, index=analysis.bm25, report=ds.report
    )
    with_vec = [q for q in qids if q in space.query_row]
    rows = [space.query_row[q] for q in with_vec]
    dense = bl.dense_run(
        space.doc_vecs, space.query_vecs[rows], space.doc_ids, with_vec, depth=analysis.depth
    )
    hybrid = bl.hybrid_run(bm25, dense, depth=analysis.depth)
    return {"bm25": bm25, "dense": dense, "hybrid": hybrid}


def _ranks(run: Run) -> dict[tuple[str, str], int]:
    df = run.df
    return dict(zip(zip(df["query_id"].tolist(), df["doc_id"].tolist(), strict=True), df["rank"].tolist(),
                    strict=True))  # fmt: skip


def judge_queue(
    analysis: Analysis, *, k: int = 10, runs: Sequence[str] | None = None, limit: int | None = None
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
    from diagnose.analysis import _check_k

    k = _check_k(k)
    if limit is not None:
        limit = _check_k(limit, "limit")
    ds = analysis.dataset
    if ds.corpus is None or ds.queries is None:
        raise _param_error(
            "corpus" if ds.corpus is None else "queries",
            "Judging needs the texts of the corpus and the queries: load a BEIR folder or give corpus= and queries=.",
        )
    golden = _golden_or_empty(analysis)
    user_runs = analysis.user_runs()
    qids = _queries_to_judge(analysis, user_runs, golden)
    if not qids:
        raise _param_error("queries", "No query to judge: no query of the data has a text.")
    space = _query_space(analysis, qids, golden)
    probes = _probe_runs(analysis, qids, space)
    names = {kind: kind for kind in probes}
    for name, kind in analysis._baselines.items():  # the constructor's baselines= (name -> kind)
        names[kind] = name
    for kind, name in list(names.items()):
        while name in user_runs:
            name = f"{name} (baseline)"
        names[kind] = name
    pool = {**user_runs, **{names[kind]: run for kind, run in probes.items()}}
    if runs is not None:
        unknown = [r for r in runs if r not in pool]
        if unknown:
            raise _param_error(
                "runs", f"No run named {unknown[0]!r} to pool; the runs are: {', '.join(pool)}."
            )
        pool = {r: pool[r] for r in runs}

    judged = set(zip(ds.qrels.df["query_id"].tolist(), ds.qrels.df["doc_id"].tolist(), strict=True))
    wanted = set(qids)
    in_corpus = space.doc_row
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
    bm25_rank, dense_rank = _ranks(probes["bm25"]), _ranks(probes["dense"])
    relevant = ds.qrels.relevant()
    rel_of: dict[str, list[str]] = {}
    for q, d in zip(relevant["query_id"].tolist(), relevant["doc_id"].tolist(), strict=True):
        if d in in_corpus:
            rel_of.setdefault(q, []).append(d)
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
        ranks = (f"BM25 #{b}" if b else f"BM25 beyond #{analysis.depth}") + ", " + (
            f"dense #{dn}" if dn else f"dense beyond #{analysis.depth}")  # fmt: skip
        sim = f"; cos {max_cos:.2f} to relevant {closest}" if rels and not near else ""
        reason = f"{where}; {ranks}{sim}"
        if near:
            reason = f"near-duplicate of relevant {closest} (cos {max_cos:.3f}); " + reason
        rows.append({
            "query_id": q, "doc_id": d, "reason": reason, "score": float(np.mean(signals)), "near_duplicate": near,
            "runs": len(by), "retrieved_by": ", ".join(by), "bm25_rank": b, "dense_rank": dn,
            "max_cos_to_relevant": max_cos, "closest_relevant": closest,
        })  # fmt: skip
    table = pd.DataFrame(rows, columns=[c for c in QUEUE_COLUMNS if c != "priority"])
    if len(table):
        table["_dup"] = np.where(table["near_duplicate"], table["max_cos_to_relevant"], -np.inf)
        table = table.sort_values(
            ["near_duplicate", "_dup", "score", "query_id", "doc_id"], ascending=[False, False, False, True, True],
            kind="mergesort",
        ).drop(columns="_dup")  # fmt: skip
    table = table.reset_index(drop=True)
    for col in ("bm25_rank", "dense_rank"):
        table[col] = table[col].astype("Int64")
    table["near_duplicate"] = table["near_duplicate"].astype(bool)
    table["runs"] = table["runs"].astype(np.int64)
    table.insert(0, "priority", np.arange(1, len(table) + 1, dtype=np.int64))
    if limit is not None:
        table = table.head(limit)
    table.attrs["pooled_runs"] = list(pool)
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


# ============================================================================================== the journal


class Entry(NamedTuple):
    """One judgement of the journal: ``grade`` 0-3 or ``"skip"``; ``time`` ISO 8601 UTC; ``line`` its line number."""

    query_id: str
    doc_id: str
    grade: int | str
    time: str
    judge: str
    line: int


def _check_grade(grade: Any, where: str) -> int | str:
    if isinstance(grade, str) and grade.strip().lower() == SKIP:
        return SKIP
    if isinstance(grade, bool) or not isinstance(grade, int | np.integer) or int(grade) not in GRADES:
        raise _param_error("grade", f"{where}: the grade must be 0, 1, 2, 3 or 'skip', got {grade!r}.")
    return int(grade)


def _check_id(value: Any, what: str, where: str) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise _param_error(what, f"{where}: the {what} must be a non-empty string, got {value!r}.")
    return str(value).strip()


def _default_judge() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in some containers
        return "anonymous"


class Journal:
    """The judgements of one golden set, one JSON object per line, in the order they were made.

    A line is ``{"query_id": .., "doc_id": .., "grade": 0-3 | "skip", "time": ISO 8601 UTC, "judge": ..}``.

    Durability: :meth:`add` opens the file in append mode, writes the whole line with one ``write``, flushes and
    ``os.fsync``s it before returning (and fsyncs the folder when it creates the file), so an acknowledged judgement
    survives a crash or a power cut; old lines are never rewritten. A crash in the middle of a write can leave a
    torn last line without its newline: the next :meth:`add` first ends that line, and reading ignores every line
    that is not valid JSON, counting it (``torn_lines``, and a ``journal_torn_line`` warning in ``report``). A line
    that is valid JSON but not a judgement (a grade of 7, no doc id) is an error naming the line: someone edited it.

    Later judgements of the same pair win (a ``"skip"`` after a grade withdraws the grade).
    """

    def __init__(self, path: PathLike, *, judge: str | None = None) -> None:
        self.path = Path(path)
        self.judge = judge or _default_judge()
        self.torn_lines: list[int] = []

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"

    def add(
        self, query_id: str, doc_id: str, grade: int | str, *, judge: str | None = None
    ) -> dict[str, Any]:
        """Append one judgement and make it durable (flush + fsync) before returning it as the dict written."""
        record = {
            "query_id": _check_id(query_id, "query_id", str(self.path)),
            "doc_id": _check_id(doc_id, "doc_id", str(self.path)),
            "grade": _check_grade(grade, str(self.path)),
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "judge": str(judge or self.judge),
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        with open(self.path, "ab") as f:
            if not created and f.tell() > 0 and not _ends_with_newline(self.path):
                line = b"\n" + line  # end a line torn by a crash, so this one stays whole
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        if created:
            _fsync_dir(self.path.parent)
        return record

    def entries(self, report: ValidationReport | None = None) -> list[Entry]:
        """Every judgement in file order (a missing file has none); torn lines are ignored and counted."""
        self.torn_lines = []
        if not self.path.exists():
            return []
        try:
            raw = self.path.read_bytes()
        except OSError as e:
            raise DataError(
                f"{self.path}: cannot read the journal ({e.strerror or e}).", param="journal"
            ) from None
        out: list[Entry] = []
        for lineno, line in enumerate(raw.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                self.torn_lines.append(lineno)
                continue
            where = f"{self.path}, line {lineno}"
            if not isinstance(obj, dict):
                raise DataError(f"{where}: expected a JSON object per line, got {type(obj).__name__}.")
            missing = [key for key in ("query_id", "doc_id", "grade") if key not in obj]
            if missing:
                raise DataError(
                    f"{where}: the judgement has no {', '.join(repr(m) for m in missing)}. Expected "
                    '{"query_id": .., "doc_id": .., "grade": 0-3 or "skip", "time": .., "judge": ..}. Fix the line '
                    "or delete it."
                )
            out.append(Entry(
                _check_id(obj["query_id"], "query_id", where), _check_id(obj["doc_id"], "doc_id", where),
                _check_grade(obj["grade"], where), str(obj.get("time", "")), str(obj.get("judge", "")), lineno,
            ))  # fmt: skip
        if self.torn_lines and report is not None:
            n = len(self.torn_lines)
            report.add(
                "journal_torn_line",
                f"{n} journal line{'s are' if n != 1 else ' is'} not valid JSON (a write interrupted by a crash) and "
                f"{'were' if n != 1 else 'was'} ignored; judge {'those pairs' if n != 1 else 'that pair'} again",
                file=str(self.path),
                count=n,
                examples=[f"line {i}" for i in self.torn_lines],
            )
        return out

    def judgements(self, report: ValidationReport | None = None) -> dict[tuple[str, str], int | str]:
        """``{(query_id, doc_id): grade}``, the latest judgement of each pair (grade 0-3 or ``"skip"``)."""
        out: dict[tuple[str, str], int | str] = {}
        for e in self.entries(report):
            out.pop((e.query_id, e.doc_id), None)  # keep the order of the latest judgement
            out[(e.query_id, e.doc_id)] = e.grade
        return out

    def as_qrels(self, report: ValidationReport | None = None) -> Qrels:
        """The new judgements alone as :class:`Qrels` (skipped pairs left out), in journal order."""
        items = [(q, d, g) for (q, d), g in self.judgements(report).items() if g != SKIP]
        df = pd.DataFrame(
            {
                "query_id": pd.Series([q for q, _, _ in items], dtype="str"),
                "doc_id": pd.Series([d for _, d, _ in items], dtype="str"),
                "relevance": np.asarray([int(g) for _, _, g in items], dtype=np.int64),
            }
        )
        return Qrels(df, str(self.path))

    def __len__(self) -> int:
        return len(self.entries())


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _fsync_dir(folder: Path) -> None:
    """Make a new file's directory entry durable (POSIX); a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def default_journal_path(data: PathLike | None = None, *, name: str = "", in_data: bool = True) -> Path:
    """Where the journal of a data set lives: ``$DIAGNOSE_JOURNAL`` when set; else ``<data folder>/judgements.jsonl``
    beside the data (``data`` is the BEIR folder, or a file of the data set: its folder) when ``in_data`` and that
    folder is writable; else ``<cache root>/judgements/<name or the folder's name>.jsonl`` (the bundled demo, read-only
    or temporary folders: pass ``in_data=False``)."""
    from diagnose.cache import default_cache_root, slug

    env = os.environ.get(JOURNAL_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    folder = None
    if data is not None:
        p = Path(data)
        folder = p if p.is_dir() else p.parent
        if in_data and os.access(folder, os.W_OK):
            return folder / JOURNAL_NAME
    label = name or (folder.resolve().name if folder is not None else "") or "data"
    return default_cache_root() / "judgements" / f"{slug(label)}.jsonl"


# ============================================================================================== merge and export


class MergeCounts(NamedTuple):
    """What merging new judgements did: ``judgements`` read, ``added`` (pairs the golden set did not judge),
    ``overridden`` (pairs it judged: the new grade wins), of which ``changed`` (a different grade)."""

    source: str
    judgements: int
    added: int
    overridden: int
    changed: int

    def sentence(self) -> str:
        return (
            f"merged {self.judgements} judgement{'s' if self.judgements != 1 else ''} from {self.source}: "
            f"{self.added} new, {self.overridden} overriding an existing grade ({self.changed} with a different grade)"
        )


def _as_new(extra: Journal | Qrels | Mapping[tuple[str, str], Any], report: ValidationReport | None) -> Qrels:
    if isinstance(extra, Journal):
        return extra.as_qrels(report)
    if isinstance(extra, Qrels):
        return extra
    items = [(str(q), str(d), g) for (q, d), g in extra.items() if g != SKIP]
    df = pd.DataFrame(
        {
            "query_id": pd.Series([q for q, _, _ in items], dtype="str"),
            "doc_id": pd.Series([d for _, d, _ in items], dtype="str"),
            "relevance": np.asarray([int(g) for _, _, g in items], dtype=np.int64),
        }
    )
    return Qrels(df, "judgements")


def merge_counts(
    qrels: Qrels, extra: Journal | Qrels, *, report: ValidationReport | None = None
) -> MergeCounts:
    """How :func:`merge` would change ``qrels`` (see :class:`MergeCounts`)."""
    new = _as_new(extra, report)
    old = qrels.df.set_index(["query_id", "doc_id"])["relevance"]
    old = old[~old.index.duplicated()]
    keys = list(zip(new.df["query_id"].tolist(), new.df["doc_id"].tolist(), strict=True))
    grades = new.df["relevance"].tolist()
    overridden = [(key, g) for key, g in zip(keys, grades, strict=True) if key in old.index]
    changed = sum(1 for key, g in overridden if int(old.loc[key]) != int(g))
    return MergeCounts(
        new.source or "judgements", len(keys), len(keys) - len(overridden), len(overridden), changed
    )


def merge(qrels: Qrels, extra: Journal | Qrels, *, report: ValidationReport | None = None) -> Qrels:
    """The golden set plus the new judgements: every pair of ``qrels`` (a new grade replaces the old one of the same
    pair, in place) and then the new pairs in their order. ``report`` gets an info line with the counts
    (:class:`MergeCounts`: how many were added, how many overrode a grade)."""
    new = _as_new(extra, report)
    counts = merge_counts(qrels, new)
    grade = dict(zip(zip(new.df["query_id"].tolist(), new.df["doc_id"].tolist(), strict=True),
                     new.df["relevance"].tolist(), strict=True))  # fmt: skip
    base = qrels.df.copy()
    keys = list(zip(base["query_id"].tolist(), base["doc_id"].tolist(), strict=True))
    base["relevance"] = np.asarray(
        [int(grade.pop(key)) if key in grade else int(g) for key, g in zip(keys, base["relevance"].tolist(),
                                                                              strict=True)], dtype=np.int64,
    )  # fmt: skip
    added = pd.DataFrame(
        {
            "query_id": pd.Series([q for q, _ in grade], dtype="str"),
            "doc_id": pd.Series([d for _, d in grade], dtype="str"),
            "relevance": np.asarray(list(grade.values()), dtype=np.int64),
        }
    )
    df = pd.concat([base, added], ignore_index=True) if len(added) else base.reset_index(drop=True)
    df["relevance"] = df["relevance"].astype(np.int64)
    if report is not None:
        report.add("judgements_merged", counts.sentence(), severity="info", file=counts.source,
                   count=max(1, counts.judgements))  # fmt: skip
    source = " + ".join(s for s in (qrels.source, counts.source) if s)
    return Qrels(df, source)


QUEUE_TSV_COLUMNS = ["query_id", "query_text", "doc_id", "doc_text", "priority", "reason", "grade"]


def read_judgements(path: PathLike, *, report: ValidationReport | None = None) -> Qrels:
    """New judgements from a file: a :class:`Journal` (JSON lines with a ``"grade"``), a judging queue TSV written by
    ``diagnose judge-queue`` with its ``grade`` column filled in (rows left empty or ``skip`` are not judgements), or
    any qrels format (:func:`diagnose.io.read_qrels`: BEIR TSV, TREC qrels, JSONL with ``"relevant"``)."""
    from diagnose.io import check_input_path, read_qrels

    check_input_path(path, "a judgement journal (JSONL), a graded judge-queue TSV or a qrels file")
    with open(path, "rb") as f:
        head = f.read(65536)
    first = next(
        (line for line in head.split(b"\n") if line.strip() and not line.lstrip().startswith(b"#")), b""
    )
    if first.rstrip(b"\r").split(b"\t") == [c.encode() for c in QUEUE_TSV_COLUMNS]:
        return _read_graded_queue(Path(path), report)
    try:
        obj = json.loads(first.decode("utf-8")) if first.lstrip().startswith(b"{") else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        obj = {"grade": None} if b'"grade"' in first else None  # a journal whose only line is torn
    if (isinstance(obj, dict) and "grade" in obj) or not first:
        return Journal(path).as_qrels(report)
    return read_qrels(path, report=report)


def _read_graded_queue(path: Path, report: ValidationReport | None) -> Qrels:
    """The graded rows of a ``diagnose judge-queue`` TSV (see :func:`read_judgements`)."""
    try:
        df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=3)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read the graded judging queue ({e}).") from None
    rows, ungraded, skipped = [], 0, 0
    for i, (q, d, g) in enumerate(zip(df["query_id"], df["doc_id"], df["grade"], strict=True), start=2):
        g = g.strip()
        if not g:
            ungraded += 1
            continue
        grade = _check_grade(int(g) if g.lstrip("-").isdigit() else g, f"{path}, line {i}")
        if grade == SKIP:
            skipped += 1
            continue
        rows.append((q.strip(), d.strip(), grade))
    if report is not None and (ungraded or skipped):
        report.add(
            "queue_rows_not_graded",
            f"{ungraded} rows of the judging queue have no grade and {skipped} were skipped: not judgements",
            severity="info", file=str(path), count=ungraded + skipped,
        )  # fmt: skip
    return Qrels(_as_new({(q, d): g for q, d, g in rows}, None).df, str(path))


def _check_writable(qrels: Qrels, path: PathLike, what: str, bad: str, fix: str) -> pd.DataFrame:
    df = qrels.df
    if df.empty:
        raise _param_error("qrels", f"{path}: no judgement to write as {what} (judge some pairs first).")
    for col in ("query_id", "doc_id"):
        has = df[col].astype("str").str.contains(bad, regex=True)
        if has.any():
            raise _param_error(
                "qrels", f"{path}: cannot write {what}: the {col} {str(df.loc[has, col].iloc[0])!r} contains "
                f"whitespace that the format uses as a separator. Fix: {fix}.",
            )  # fmt: skip
    return df


def write_trec_qrels(qrels: Qrels, path: PathLike) -> None:
    """Write ``qrels`` as TREC qrels, ``qid 0 docid grade`` per line (what ``trec_eval`` and
    :func:`diagnose.io.read_qrels` read). Ids containing whitespace cannot be written (DataError)."""
    df = _check_writable(qrels, path, "TREC qrels", r"\s", "replace the spaces in the ids, or write BEIR TSV")
    lines = [
        f"{q} 0 {d} {int(g)}\n" for q, d, g in zip(df["query_id"], df["doc_id"], df["relevance"], strict=True)
    ]
    Path(path).write_text("".join(lines), encoding="utf-8")


def write_beir_qrels(qrels: Qrels, path: PathLike) -> None:
    """Write ``qrels`` as a BEIR qrels TSV: the header ``query-id<TAB>corpus-id<TAB>score``, then one judgement per
    line. Ids containing a tab or a newline cannot be written (DataError)."""
    df = _check_writable(qrels, path, "BEIR TSV", r"[\t\r\n]", "remove tabs and newlines from the ids")
    lines = ["query-id\tcorpus-id\tscore\n"] + [
        f"{q}\t{d}\t{int(g)}\n" for q, d, g in zip(df["query_id"], df["doc_id"], df["relevance"], strict=True)
    ]
    Path(path).write_text("".join(lines), encoding="utf-8")


# ============================================================================================== loading


def load_for_judging(
    data: PathLike | None = None,
    *,
    corpus: PathLike | None = None,
    queries: PathLike | None = None,
    qrels: PathLike | None = None,
    split: str = "test",
    runs: Sequence[str | Path | tuple[str | None, PathLike]] = (),
) -> Dataset:
    """:func:`diagnose.load` where the golden set is optional: a BEIR folder without ``qrels/<split>.tsv``, or a
    corpus and a queries file (a production query log) alone get empty qrels. Evaluating such a data set stays an
    error (no query has a relevant document); :func:`judge_queue` and :func:`with_judgements` work."""
    from diagnose.api import load

    if data is None and (corpus is None or queries is None):
        raise DataError("Judging needs a corpus and queries: pass a BEIR folder, or corpus= and queries=.")
    return load(data, corpus=corpus, queries=queries, qrels=qrels, split=split, runs=runs, require_qrels=False)


# ============================================================================================== effect


def with_judgements(analysis: Analysis, journal: Journal | Qrels) -> Analysis:
    """A new :class:`~diagnose.analysis.Analysis` over the same data with the golden set merged with ``journal``
    (:func:`merge`), and the same runs (as computed: live retrievers are not run again, so a query that only now
    has a relevant document scores 0 for them), baselines (recomputed over the new golden queries), model or encoder,
    vectors, k, cutoffs, metrics, failure definition, depth, BM25 engine and thresholds. ``analysis`` is not
    changed; its BM25 index is shared (it depends only on the corpus)."""
    from diagnose.analysis import Analysis

    ds = analysis.dataset
    report = ValidationReport(list(ds.report.problems), dict(ds.report.stats))
    merged = merge(ds.qrels, journal, report=report)
    new_ds = replace(ds, qrels=merged, report=report)
    # the constructor's arguments, as the analysis keeps them (private attributes of the same package)
    after = Analysis(
        new_ds, analysis.user_runs(), k=analysis.k, model=analysis.model, failure=analysis.failure,
        baselines=dict(analysis._baselines), cache_dir=analysis.cache_dir, ks=analysis.ks,
        metrics=analysis._metric_names, depth=analysis.depth, bm25_engine=analysis.bm25_engine,
        thresholds=analysis._thresholds, encoder=analysis._encoder_given, embeddings=analysis._embeddings,
        progress=analysis._reporter,
    )  # fmt: skip
    if analysis._has("bm25"):
        after._memo["bm25"] = analysis.bm25
    if analysis._has("encoder") and analysis._encoder_given is None:
        after._memo["encoder"] = analysis.encoder
    return after


@dataclass(frozen=True)
class RunEffect:
    """One run before and after the new judgements, at k: the mean ``metric`` (None when the golden set was empty),
    the failed golden queries (no relevant document in the top k), and ``label_gaps``: former failures that are now
    hits because a newly judged relevant document is in the run's top k (the run was right, the golden set had a
    hole)."""

    run: str
    metric: str
    before: float | None
    after: float
    failures_before: int
    failures_after: int
    label_gaps: list[str]
    queries_before: int
    queries_after: int

    def sentence(self, n_judgements: int) -> str:
        before = f"{self.before:.3f}" if self.before is not None else "–"
        gaps = len(self.label_gaps)
        return (
            f"{self.metric.replace('ndcg', 'nDCG')} {before} -> {self.after:.3f} after {n_judgements} judgement"
            f"{'s' if n_judgements != 1 else ''}, {gaps} failure{'s were label gaps' if gaps != 1 else ' was a label gap'}"
            f" (failures {self.failures_before} -> {self.failures_after}; golden queries "
            f"{self.queries_before} -> {self.queries_after})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run, "metric": self.metric, "before": self.before, "after": self.after,
            "failures_before": self.failures_before, "failures_after": self.failures_after,
            "label_gaps": len(self.label_gaps), "label_gap_queries": list(self.label_gaps),
            "queries_before": self.queries_before, "queries_after": self.queries_after,
        }  # fmt: skip


def _changed_pairs(before: Qrels, after: Qrels) -> tuple[int, set[tuple[str, str]]]:
    """(pairs whose grade is new or different, pairs relevant after but not before)."""
    old, new = before.as_dict(), after.as_dict()
    changed = sum(1 for q, docs in new.items() for d, g in docs.items() if old.get(q, {}).get(d) != g)
    newly = {
        (q, d) for q, docs in new.items() for d, g in docs.items() if g > 0 and old.get(q, {}).get(d, 0) <= 0
    }
    return changed, newly


def judgement_effect(before: Analysis, after: Analysis, k: int | None = None) -> dict[str, Any]:
    """What the new judgements changed, per run: ``{"k", "metric", "n_judgements", "runs": {name: RunEffect.to_dict()},
    "sentences": {name: "nDCG@10 0.612 -> 0.655 after 40 judgements, 6 failures were label gaps (...)"}}``.

    ``metric`` is ``ndcg@k``; failures are golden queries with ``hit_rate@k`` = 0. Means are over each side's golden
    queries (queries that only now have a relevant document join the mean after). ``n_judgements``: pairs whose
    grade is new or different. A run absent from ``before`` (or a ``before`` with no golden set) has ``before`` None.
    """
    from diagnose.analysis import _check_k

    k = after.k if k is None else _check_k(k)
    metric, hit = f"ndcg@{k}", f"hit_rate@{k}"
    n_judged, newly = _changed_pairs(before.dataset.qrels, after.dataset.qrels)
    try:
        evs_before = before.evaluations([metric, hit])
    except DataError:
        evs_before = {}
    evs_after = after.evaluations([metric, hit])
    out: dict[str, Any] = {"k": k, "metric": metric, "n_judgements": n_judged, "runs": {}, "sentences": {}}
    for name, ev in evs_after.items():
        b = evs_before.get(name)
        failed_before = set(b.per_query.index[b.per_query[hit] == 0]) if b is not None else set()
        hits_after = set(ev.per_query.index[ev.per_query[hit] > 0])
        top = after.runs[name].top(k)
        retrieved_new = {q for q, d in zip(top["query_id"].tolist(), top["doc_id"].tolist(), strict=True)
                         if (q, d) in newly}  # fmt: skip
        gaps = [q for q in (b.per_query.index if b is not None else []) if q in failed_before and q in hits_after
                and q in retrieved_new]  # fmt: skip
        effect = RunEffect(
            run=name, metric=metric, before=float(b.aggregate[metric]) if b is not None else None,
            after=float(ev.aggregate[metric]), failures_before=len(failed_before),
            failures_after=int((ev.per_query[hit] == 0).sum()), label_gaps=[str(q) for q in gaps],
            queries_before=b.n_queries if b is not None else 0, queries_after=ev.n_queries,
        )  # fmt: skip
        out["runs"][name] = effect.to_dict()
        out["sentences"][name] = effect.sentence(n_judged)
    return out


def iter_effect_lines(effect: Mapping[str, Any]) -> Iterator[str]:
    """The sentences of :func:`judgement_effect`, one per run, prefixed by the run name."""
    for name, sentence in effect["sentences"].items():
        yield f"{name}: {sentence}"
