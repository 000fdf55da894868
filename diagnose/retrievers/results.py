"""What a retriever returned, as ranked lists: the id of each result whatever its form, chunks collapsed into documents,
scores made strictly decreasing as float32; and what happened along the way, counted in the report (the conventions
are in the package docstring)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from diagnose.data import DataError, Severity, ValidationReport
from diagnose.retrievers.calls import Outcome, RetrieverTimeout
from diagnose.retrievers.kinds import describe

ChunkToDoc = str | Callable[[str], Any] | None


def chunk_mapper(chunk_to_doc: ChunkToDoc) -> tuple[Callable[[str], Any] | None, bool]:
    """``(id mapping or None, collapse repeated ids?)``."""
    if chunk_to_doc is None or (isinstance(chunk_to_doc, str) and chunk_to_doc.lower() == "none"):
        return None, False
    if isinstance(chunk_to_doc, str) and chunk_to_doc.lower() == "max":
        return None, True
    if callable(chunk_to_doc):
        return chunk_to_doc, True
    raise DataError(
        f"chunk_to_doc must be 'max', None/'none' or a callable chunk_id -> doc_id; got {chunk_to_doc!r}.",
        param="chunk_to_doc",
    )


def ranked_lists(
    qids: list[str],
    outcomes: list[Outcome],
    id_key: str | None,
    mapper: Callable[[str], Any] | None,
    collapse: bool,
    depth: int,
    run_name: str,
) -> tuple[dict[str, list[tuple[str, float]]], dict[str, float], dict[str, str], _Tally]:
    """``(lists, latency, errors, tally)``: each query's outcome read as a ranked list of at most ``depth``
    ``(doc_id, score)`` and its latency, or as its error; what happened along the way counted in ``tally``."""
    lists: dict[str, list[tuple[str, float]]] = {}
    latency: dict[str, float] = {}
    errors: dict[str, str] = {}
    tally = _Tally()
    for qid, (result, ms) in zip(qids, outcomes, strict=True):
        if isinstance(result, BaseException):
            errors[qid] = f"{type(result).__name__}: {result}"
            if isinstance(result, RetrieverTimeout):
                tally.timed_out.append(qid)
                tally.timeout = result.seconds
            continue
        items = [_item(x, id_key, qid, run_name) for x in _as_list(result, qid, run_name)]
        items = _collapse(items, mapper, collapse, qid, tally)
        lists[qid] = _scored(items[:depth], qid, tally)
        tally.short(qid, len(lists[qid]), depth)
        if ms is not None:
            latency[qid] = ms
    return lists, latency, errors, tally


def document_list(
    items: list[tuple[str, float | None]], mapper: Callable[[str], Any] | None, qid: str
) -> list[tuple[str, float]]:
    """One query's ranked ``(id, score)`` list as documents: each id mapped by ``mapper``, a document kept once at
    its first rank with its best score, scores made strictly decreasing as float32: what ``chunk_to_doc="max"``
    (or a callable) does to a retriever's list, for a chunk run read from a file too
    (:func:`diagnose.search.documents.document_run`)."""
    tally = _Tally()
    return _scored(_collapse(items, mapper, True, qid, tally), qid, tally)


class _Tally:
    """What happened to the results, for the report."""

    def __init__(self) -> None:
        self.collapsed = 0
        self.duplicates: list[str] = []
        self.adjusted: list[str] = []
        self.replaced: list[str] = []
        self.short_lists: list[str] = []
        self.timed_out: list[str] = []
        self.timeout = 0.0

    def short(self, qid: str, n: int, depth: int) -> None:
        if n < depth:
            self.short_lists.append(f"{qid}: {n} of {depth}")


def _as_list(result: Any, qid: str, run_name: str) -> list[Any]:
    if result is None or isinstance(result, str | bytes | Mapping) or not isinstance(result, Iterable):
        raise DataError(
            f"retriever {run_name!r} returned {describe(result)} for query {qid!r}; expected a list of doc ids, "
            "of (doc_id, score) pairs, of LangChain Documents or of LlamaIndex NodeWithScore."
        )
    return list(result)


def _item(x: Any, id_key: str | None, qid: str, run_name: str) -> tuple[str, float | None]:
    """``(doc_id, score or None)`` of one result, whatever its form."""
    score: Any = None
    if hasattr(x, "page_content") and hasattr(x, "metadata"):  # LangChain Document
        if id_key is not None:
            raw = _from_metadata(x.metadata, id_key, qid, run_name, "Document")
        else:
            raw = getattr(x, "id", None)
            if raw is None:
                raise DataError(
                    f"retriever {run_name!r}, query {qid!r}: a LangChain Document has no id (Document.id is None; "
                    f"metadata keys: {', '.join(map(str, x.metadata)) or 'none'}). Fix: give ids when indexing "
                    "(add_documents(docs, ids=...) or Document(id=...)), or pass id_key='<the metadata key "
                    "holding the document id>'."
                )
    elif hasattr(x, "node") and hasattr(x, "score"):  # LlamaIndex NodeWithScore
        node = x.node
        if id_key is not None:
            raw = _from_metadata(node.metadata, id_key, qid, run_name, "node")
        else:
            raw = getattr(node, "ref_doc_id", None) or node.node_id
        score = x.score
    elif isinstance(x, tuple | list):
        if len(x) != 2:
            raise DataError(
                f"retriever {run_name!r}, query {qid!r}: the result {x!r} has {len(x)} fields; expected a doc id "
                "or a (doc_id, score) pair."
            )
        raw, score = x
    else:
        raw = x
    if raw is None or isinstance(raw, bytes | float | Mapping | list | tuple):
        raise DataError(
            f"retriever {run_name!r}, query {qid!r}: {raw!r} is not a document id; expected a string (or an int). "
            "Fix: return doc ids, (doc_id, score) pairs, Documents or NodeWithScore."
        )
    doc = str(raw).strip()
    if not doc:
        raise DataError(f"retriever {run_name!r}, query {qid!r}: a result has an empty document id.")
    if score is not None:
        try:
            score = float(score)
        except (TypeError, ValueError):
            raise DataError(
                f"retriever {run_name!r}, query {qid!r}: the score {score!r} of {doc!r} is not a number."
            ) from None
    return doc, score


def _from_metadata(metadata: Mapping[str, Any], id_key: str, qid: str, run_name: str, what: str) -> Any:
    if id_key not in metadata or metadata[id_key] is None:
        raise DataError(
            f"retriever {run_name!r}, query {qid!r}: a {what} has no metadata[{id_key!r}] (its metadata keys: "
            f"{', '.join(map(str, metadata)) or 'none'}). Fix: store the document id under {id_key!r} when "
            "indexing, or pass the right id_key."
        )
    return metadata[id_key]


def _collapse(
    items: list[tuple[str, float | None]],
    mapper: Callable[[str], Any] | None,
    collapse: bool,
    qid: str,
    tally: _Tally,
) -> list[tuple[str, float | None]]:
    """Repeated ids -> one entry at the first rank: best score (``collapse``) or first occurrence's score."""
    out: dict[str, float | None] = {}
    repeats = 0
    for chunk, score in items:
        doc = chunk
        if mapper is not None:
            try:
                mapped = mapper(chunk)
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # noqa: BLE001 - user code: a SystemExit is a mistake to report, not an exit
                raise DataError(
                    f"chunk_to_doc raised {type(e).__name__}: {e} on the id {chunk!r} (query {qid!r}). Fix the "
                    "mapping so that it accepts every id the retriever returns."
                ) from e
            doc = str(mapped).strip() if mapped is not None else ""
            if not doc:
                raise DataError(
                    f"chunk_to_doc mapped the id {chunk!r} (query {qid!r}) to an empty document id."
                )
        if doc not in out:
            out[doc] = score
            continue
        repeats += 1
        if collapse:
            best = out[doc]
            out[doc] = None if best is None or score is None else max(best, score)
    if repeats:
        if collapse:
            tally.collapsed += repeats
        else:
            tally.duplicates.append(f"{qid}: {repeats}")
    return list(out.items())


def _scored(items: list[tuple[str, float | None]], qid: str, tally: _Tally) -> list[tuple[str, float]]:
    """Scores strictly decreasing as float32 along the list (see the module docstring)."""
    if not items:
        return []
    scores = [s for _, s in items]
    with np.errstate(over="ignore", invalid="ignore"):
        usable = all(s is not None and math.isfinite(float(np.float32(s))) for s in scores)
    if not usable:
        if any(s is not None for s in scores):
            tally.replaced.append(qid)
        return [(doc, -float(rank)) for rank, (doc, _) in enumerate(items, start=1)]
    out: list[tuple[str, float]] = []
    prev: np.float32 | None = None
    changed = False
    down = np.float32(-np.inf)
    with np.errstate(over="ignore"):
        for doc, s in items:
            assert s is not None
            f = np.float32(s)
            if prev is not None and not f < prev:
                f = np.nextafter(prev, down)
                s = float(f)
                changed = True
            out.append((doc, float(s)))
            prev = f
    if changed:
        tally.adjusted.append(qid)
    return out


def record(
    report: ValidationReport,
    run_name: str,
    n_queries: int,
    errors: dict[str, str],
    tally: _Tally,
    depth: int,
    collapse: bool,
    latency: dict[str, float],
) -> None:
    """Count in ``report`` what happened to the run of retriever ``run_name``: errors, repeated ids, collapsed
    chunks, adjusted or replaced scores, short lists, timeouts, the slowest queries; and its stats (queries,
    errors, timeouts, p50 and p95 latency)."""
    label = f"retriever {run_name!r}"
    _record_problems(report, label, n_queries, errors, tally, collapse)
    _record_tally(report, label, n_queries, errors, tally, depth)
    _record_stats(report, label, n_queries, errors, latency, tally)


def _record_problems(
    report: ValidationReport,
    label: str,
    n_queries: int,
    errors: dict[str, str],
    tally: _Tally,
    collapse: bool,
) -> None:
    """The queries the retriever raised on or timed out on, the repeated ids kept once, the chunks merged into their
    document."""
    late = set(tally.timed_out)
    raised = [f"{q}: {msg}" for q, msg in errors.items() if q not in late]
    report.add(
        "retriever_error",
        f"{label} raised on {len(raised)} of {n_queries} queries; they have no results and score 0 (see "
        "Run.errors for every message). Fix the retriever and run again.",
        severity="error",
        count=len(raised),
        examples=raised,
    )
    if tally.timed_out:
        report.add(
            "retriever_timeout",
            f"{label} gave no answer within {tally.timeout:g} s on {len(tally.timed_out)} of {n_queries} queries; they "
            "count as retrieving nothing and score 0 (the calls were abandoned). Fix the retriever, or raise the "
            "timeout (--retriever-timeout, timeout=) if they are only slow.",
            severity="error",
            count=len(tally.timed_out),
            examples=tally.timed_out,
        )
    report.add(
        "retriever_duplicate_ids",
        f"{label} returned the same id more than once for {len(tally.duplicates)} queries; the first occurrence "
        "is kept (chunk_to_doc=None). Pass chunk_to_doc='max' if these are chunks of one document.",
        count=len(tally.duplicates),
        examples=tally.duplicates,
    )
    if collapse:
        report.add(
            "retriever_chunks_collapsed",
            f"{label}: {tally.collapsed} results were further chunks of a document already listed, merged into it "
            "(first rank, best score; chunk_to_doc='max').",
            severity="info",
            count=tally.collapsed,
        )


def _note(
    report: ValidationReport, code: str, ids: list[str], message: str, severity: Severity = "info"
) -> None:
    """A problem counted by the queries it happened to (``ids``, also its examples)."""
    report.add(code, message, severity=severity, count=len(ids), examples=ids)


def _record_tally(
    report: ValidationReport, label: str, n_queries: int, errors: dict[str, str], tally: _Tally, depth: int
) -> None:
    """The queries whose scores were lowered to keep the retriever's order or replaced by ``-rank``, the lists
    shorter than ``depth`` (a warning when more than half)."""
    _note(
        report,
        "retriever_scores_adjusted",
        tally.adjusted,
        f"{label} gave tied or out-of-order scores for {len(tally.adjusted)} queries; those scores were lowered to "
        "the next float32 below the previous one so that trec_eval's score order keeps the retriever's order.",
    )
    _note(
        report,
        "retriever_scores_replaced",
        tally.replaced,
        f"{label} gave some missing or non-finite scores for {len(tally.replaced)} queries; their scores are -rank "
        "instead.",
    )
    ran = n_queries - len(errors)
    _note(
        report,
        "retriever_short_lists",
        tally.short_lists,
        f"{label} returned fewer than depth={depth} documents for {len(tally.short_lists)} of {ran} queries "
        "(after merging chunks). If the corpus is larger than that, ask your retriever for more (LangChain "
        "search_kwargs={'k': ...}, LlamaIndex similarity_top_k=...); recall at depth is capped by it.",
        "warning" if len(tally.short_lists) * 2 > ran else "info",
    )


def _record_stats(
    report: ValidationReport,
    label: str,
    n_queries: int,
    errors: dict[str, str],
    latency: dict[str, float],
    tally: _Tally,
) -> None:
    """Queries run, errors, timeouts, the p50 / p95 latency in milliseconds, and the slowest queries by name."""
    report.stats[f"{label} queries"] = n_queries
    report.stats[f"{label} errors"] = len(errors) - len(tally.timed_out)
    report.stats[f"{label} timeouts"] = len(tally.timed_out)
    if not latency:
        return
    values = np.fromiter(latency.values(), dtype=np.float64)
    p50 = float(np.percentile(values, 50))
    report.stats[f"{label} latency_ms p50"] = round(p50, 3)
    report.stats[f"{label} latency_ms p95"] = round(float(np.percentile(values, 95)), 3)
    top = slowest(latency)
    outlier = top[0][1] >= SLOW_MS and top[0][1] > 10 * p50
    report.add(
        "retriever_slowest_queries",
        f"{label}: the slowest queries (median {_ms(p50)})"
        + (f"; the slowest took {top[0][1] / p50:,.0f} times the median, which p95 hides" if outlier else ""),
        severity="warning" if outlier else "info",
        count=len(top),
        examples=[f"{q}: {_ms(ms)}" for q, ms in top],
    )


def _ms(ms: float) -> str:
    return f"{ms:,.1f} ms" if ms >= 1 else f"{ms:.3f} ms"


SLOW_MS = 1000.0  # the slowest query is a warning from 1 s on (and over 10 times the median)


def slowest(latency: Mapping[str, float], n: int = 5) -> list[tuple[str, float]]:
    """The ``n`` slowest ``(query_id, ms)``, slowest first (ties by query id)."""
    return sorted(latency.items(), key=lambda item: (-item[1], item[0]))[:n]
