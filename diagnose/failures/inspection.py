"""One query in one run, seen whole: the missed targets with their evidence, and what the run retrieved instead.

:func:`inspect_query` gathers it from a diagnosis (nothing is recomputed that the diagnosis already holds: class,
cosine, ranks, terms); :class:`Inspection` shows itself as HTML in a notebook (every user text escaped) and as a
plain dict (``to_dict``). The app's Query inspector page draws the same object.

A query can miss dozens of targets (NFCorpus: 63). The targets are held worst first (the order of the Worst queries
page, :func:`diagnose.failures.sort_worst`) and grouped by failure class (:meth:`Inspection.groups`): the class's
recommendation once, the worst few targets opened (:data:`diagnose.defaults.INSPECT_OPEN`), the others in a compact
table (:func:`targets_table`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diagnose import defaults
from diagnose.data import Dataset, Run, fields_dict
from diagnose.failures import CLASS_LABELS, Diagnosis, Failure, rank_range_text, sort_worst
from diagnose.lexical import BM25Index, bm25_rank_range, highlight_spans, term_overlap
from diagnose.runtime.lazy import pandas as pd
from diagnose.search.space import VectorSpace


@dataclass(frozen=True)
class Target:
    """A missed relevant document: its failure (evidence, class, recommendation), its text, and the character
    spans of the query terms it contains (``spans`` index ``title + "\\n" + text``)."""

    failure: Failure
    title: str
    text: str
    present_stems: tuple[str, ...]

    def spans(self) -> list[tuple[int, int]]:
        return highlight_spans(self.body, self.present_stems)

    @property
    def in_corpus(self) -> bool:
        """Whether the target is in the corpus (one that is not is a ``missing_document`` failure)."""
        return self.failure.cls != "missing_document"

    @property
    def body(self) -> str:
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class TargetGroup:
    """The missed targets of one failure class in one query, worst first, with the class's recommendation (one per
    class and run kind: every failure of the class carries the same). ``opened``: those among the query's worst few,
    to show whole; ``collapsed``: the others, to list."""

    cls: str
    recommendation: str
    targets: tuple[Target, ...]
    opened: tuple[Target, ...]
    collapsed: tuple[Target, ...]

    @property
    def label(self) -> str:
        return CLASS_LABELS[self.cls]


def group_targets(
    targets: tuple[Target, ...], open_n: int = defaults.INSPECT_OPEN
) -> tuple[TargetGroup, ...]:
    """``targets`` (worst first) grouped by class, the groups in the order of their worst target; the first
    ``open_n`` targets overall are the opened ones (``open_n`` at least 0; the number of targets opens all)."""
    if open_n < 0:
        raise ValueError(f"open_n must be at least 0, got {open_n}")
    opened = set(range(open_n))
    by_class: dict[str, list[int]] = {}
    for i, t in enumerate(targets):
        by_class.setdefault(t.failure.cls, []).append(i)
    return tuple(
        TargetGroup(
            cls=cls,
            recommendation=targets[idx[0]].failure.recommendation,
            targets=tuple(targets[i] for i in idx),
            opened=tuple(targets[i] for i in idx if i in opened),
            collapsed=tuple(targets[i] for i in idx if i not in opened),
        )
        for cls, idx in by_class.items()
    )


def targets_table(targets: tuple[Target, ...]) -> pd.DataFrame:
    """One row per target (in the order given): id, grade, cosine, the run's, dense and BM25 ranks (best of the tie
    group), the share of query terms in it and the missing ones. Ranks are nullable integers (empty: not retrieved,
    not in the corpus, BM25 score 0)."""
    rows = [
        {
            "target": t.failure.doc_id,
            "grade": t.failure.grade,
            "cosine": t.failure.cosine,
            "run rank": t.failure.run_rank,
            "dense rank": t.failure.dense_rank,
            "BM25 rank": t.failure.bm25_rank,
            "overlap": t.failure.overlap,
            "missing terms": ", ".join(t.failure.missing_terms),
        }
        for t in targets
    ]
    columns = ["target", "grade", "cosine", "run rank", "dense rank", "BM25 rank", "overlap", "missing terms"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype({"cosine": float, "overlap": float, **dict.fromkeys(columns[3:6], "Int64")})


@dataclass(frozen=True)
class Inspection:
    """What :meth:`diagnose.Analysis.inspect` returns."""

    query_id: str
    query_text: str
    run: str
    k: int
    mode: str
    query_terms: tuple[str, ...]
    calibrated_threshold: float
    seed_threshold: float
    targets: tuple[Target, ...]
    retrieved: pd.DataFrame = field(repr=False)
    relevant_found: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.targets)

    def groups(self, open_n: int = defaults.INSPECT_OPEN) -> tuple[TargetGroup, ...]:
        """The targets (worst first) grouped by class, the worst ``open_n`` opened: :func:`group_targets`."""
        return group_targets(self.targets, open_n)

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields_dict(self, "query_id", "query_text", "run", "k", "mode"),
            "failed": self.failed,
            "query_terms": list(self.query_terms),
            "thresholds": {"calibrated": self.calibrated_threshold, "seed": self.seed_threshold},
            "targets": [{**t.failure.to_dict(), "title": t.title, "text": t.text} for t in self.targets],
            "relevant_found": list(self.relevant_found),
            "retrieved": self.retrieved.replace({np.nan: None}).to_dict(orient="records"),
        }

    def __repr__(self) -> str:
        state = f"{len(self.targets)} missed target(s)" if self.failed else "did not fail"
        return f"Inspection(query {self.query_id!r} in run {self.run!r} at k={self.k}: {state})"

    def _repr_html_(self) -> str:
        e = html.escape
        out = [
            f"<div><p><b>Query {e(self.query_id)}</b> in run <b>{e(self.run)}</b> (k={self.k}): "
            f"{e(self.query_text)}</p>",
            f"<p>Query terms (BM25 tokenizer): {e(', '.join(self.query_terms)) or 'none'}. Cosine thresholds: "
            f"seed {self.seed_threshold:.2f}, calibrated {self.calibrated_threshold:.3f}.</p>",
        ]
        if not self.failed:
            found = ", ".join(self.relevant_found)
            out.append(f"<p>This query did not fail at k={self.k}: relevant documents found: {e(found)}.</p>")
        for g in self.groups(open_n=len(self.targets)):
            out.append(
                f"<h3>{e(g.label)} <code>{e(g.cls)}</code>: {len(g.targets)} missed target(s)</h3>"
                f"<p><b>Recommendation.</b> {e(g.recommendation)}</p>"
            )
            out.extend(_target_html(t) for t in g.targets)
        if len(self.retrieved):
            table = self.retrieved.to_html(
                index=False, escape=True, border=0, float_format=lambda v: f"{v:.3f}", na_rep="–"
            )
            out.append(f"<p><b>What the run retrieved (top {self.k})</b></p>{table}")
        else:
            out.append("<p>The run has no results for this query: it scores 0 on every metric.</p>")
        out.append("</div>")
        return "".join(out)


def _target_html(t: Target) -> str:
    """One missed target in the notebook view: the evidence table, sentence, terms and the text (marked)."""
    e, f = html.escape, t.failure
    return (
        f"<h4>target {e(f.doc_id)} (grade {f.grade})</h4>"
        "<table><tr><th>cos(query, target)</th><th>run rank</th><th>dense rank</th><th>BM25 rank</th>"
        "<th>query terms in target</th></tr>"
        f"<tr><td>{_num(f.cosine)}</td><td>{_rank(f.run_rank, f.run_depth)}</td>"
        f"<td>{rank_range_text(f.dense_rank, f.dense_rank_worst, none='–')}</td><td>{_bm25_rank(f)}</td>"
        f"<td>{_pct(f.overlap)}</td></tr></table>"
        f"<p><b>Evidence.</b> {e(f.evidence)}</p>"
        f"<p>Terms present: {_terms(f.present_terms, '#d4f4dd')}; missing: {_terms(f.missing_terms, '#fde2e1')}</p>"
        f"<details><summary>The target (query terms it contains marked)</summary><p>{_marked(t)}</p></details>"
    )


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def _rank(rank: int | None, depth: int | None = None) -> str:
    if rank is None:
        return f"not in the run (depth {depth})" if depth is not None else "–"
    return f"#{rank}"


def _bm25_rank(f: Failure) -> str:
    """The target's BM25 rank range, or "none (score 0)" for a target that shares no weighted term with the query."""
    if f.bm25_rank is None and f.bm25_score is not None:
        return "none (score 0)"
    return rank_range_text(f.bm25_rank, f.bm25_rank_worst, none="–")


def _terms(terms: tuple[str, ...], colour: str) -> str:
    if not terms:
        return "none"
    return " ".join(f'<span style="background:{colour};padding:0 3px">{html.escape(t)}</span>' for t in terms)


def _marked(t: Target) -> str:
    body, pos, out = t.body, 0, []
    for a, b in t.spans():
        out.append(html.escape(body[pos:a]))
        out.append(f"<mark>{html.escape(body[a:b])}</mark>")
        pos = b
    out.append(html.escape(body[pos:]))
    return "".join(out).replace("\n", "<br>")


class _Cosines:
    """cos(query, document) and cos(document, missed target) of the documents a query retrieved.

    Read from the failure records (:attr:`Failure.top_retrieved`: the diagnosis computed them once); computed here
    only for what no record holds: a query that did not fail, a document below the records' depth, a cosine a
    record could not take (no query vector: the cosine to the target needs only the two documents)."""

    def __init__(self, space: VectorSpace, query_id: str, failures: list[Failure]) -> None:
        self.space = space
        self.qrow = space.query_row.get(query_id)
        self.held = {(c.doc_id, f.doc_id): c for f in failures for c in f.top_retrieved}
        self.to_query = {c.doc_id: c.cosine_query for f in failures for c in f.top_retrieved}

    def query(self, doc_id: str) -> float | None:
        held = self.to_query.get(doc_id)
        if held is not None:
            return held
        r = self.space.doc_row.get(doc_id)
        if r is None or self.qrow is None:
            return None
        return float(self.space.query_vecs[self.qrow] @ self.space.doc_vecs[r])

    def target(self, doc_id: str, target_id: str) -> float | None:
        c = self.held.get((doc_id, target_id))
        if c is not None and c.cosine_target is not None:
            return c.cosine_target
        r, tr = self.space.doc_row.get(doc_id), self.space.doc_row.get(target_id)
        if r is None or tr is None:
            return None
        return float(self.space.doc_vecs[r] @ self.space.doc_vecs[tr])


def _judgement(grade: int | None) -> str:
    return "unjudged" if grade is None else (f"relevant ({grade})" if grade > 0 else "not relevant (0)")


def inspect_query(
    ds: Dataset, run: Run, diagnosis: Diagnosis, space: VectorSpace, bm25: BM25Index, query_id: str
) -> Inspection:
    """The :class:`Inspection` of ``query_id`` in ``run`` under ``diagnosis`` (same run, k and failure mode).

    The cosines of the retrieved documents are the failure records' (:class:`_Cosines`); their BM25 ranks (no record
    holds them) are computed here, once per query: ``bm25_rank``, ``bm25_rank_worst`` the first and last rank of the
    tie group (:func:`diagnose.lexical.bm25_rank_range`), both empty for a BM25 score of 0 (no query term in it)."""
    q_text = ds.queries.text_of().get(query_id, "") if ds.queries is not None else ""
    failures = sort_worst([f for f in diagnosis.failures if f.query_id == query_id])
    doc = _DocText(ds, space)
    targets = []
    for f in failures:
        d = doc(f.doc_id)
        title, text = d if d is not None else ("", "")
        ov = term_overlap(q_text, f"{title} {text}")
        targets.append(Target(f, title, text, ov.stems_present))
    k = diagnosis.k
    top = run.df[(run.df["query_id"] == query_id) & (run.df["rank"] <= k)]
    grades = ds.qrels.df[ds.qrels.df["query_id"] == query_id]
    grade_of = {str(d): int(g) for d, g in zip(grades["doc_id"], grades["relevance"], strict=True)}
    scores = bm25.scores(q_text) if q_text else None
    retrieved = _retrieved_frame(top, doc, grade_of, scores, _Cosines(space, query_id, failures), failures)
    relevant_found = tuple(d for d in top["doc_id"].tolist() if grade_of.get(d, 0) > 0)
    cal = diagnosis.calibration
    return Inspection(
        query_id=query_id,
        query_text=q_text,
        run=run.name,
        k=k,
        mode=diagnosis.mode,
        query_terms=term_overlap(q_text, "").query_terms,
        calibrated_threshold=cal.calibrated,
        seed_threshold=diagnosis.thresholds.seed_cosine,
        targets=tuple(targets),
        retrieved=retrieved,
        relevant_found=relevant_found,
    )


class _DocText:
    """A document's (title, text) by id, None when it is not in the corpus (or there is no corpus)."""

    def __init__(self, ds: Dataset, space: VectorSpace) -> None:
        self.corpus = ds.corpus.df if ds.corpus is not None else None
        self.row_of = space.doc_row

    def __call__(self, doc_id: str) -> tuple[str, str] | None:
        r = self.row_of.get(doc_id)
        if r is None or self.corpus is None:
            return None
        return str(self.corpus["title"].iat[r] or ""), str(self.corpus["text"].iat[r] or "")


def _retrieved_frame(
    top: pd.DataFrame,
    doc: _DocText,
    grade_of: dict[str, int],
    scores: np.ndarray | None,
    cosines: _Cosines,
    failures: list[Failure],
) -> pd.DataFrame:
    """The retrieved top k of the query, one row a document: judgement, cosines, BM25 ranks, run score, text."""
    target_ids = list(dict.fromkeys(f.doc_id for f in failures))
    rows = []
    for doc_id, rank, score in zip(
        top["doc_id"].tolist(), top["rank"].tolist(), top["score"].tolist(), strict=True
    ):
        r = doc.row_of.get(doc_id)
        d = doc(doc_id)
        best, worst = bm25_rank_range(scores, r) if r is not None and scores is not None else (None, None)
        row: dict[str, Any] = {
            "rank": int(rank),
            "doc_id": doc_id,
            "judgement": _judgement(grade_of.get(doc_id)),
            "cosine": cosines.query(doc_id),
            "bm25_rank": best,
            "bm25_rank_worst": worst,
        }
        for t in target_ids:
            row[f"cos to {t}"] = cosines.target(doc_id, t)
        row["run score"] = float(score)
        row["document"] = " ".join(d).strip()[:200] if d else "(not in the corpus)"
        rows.append(row)
    retrieved = pd.DataFrame(rows)
    if len(retrieved):
        retrieved = retrieved.astype({"bm25_rank": "Int64", "bm25_rank_worst": "Int64"})
    return retrieved
