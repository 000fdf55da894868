"""The golden set with the new judgements: merge them (a new grade wins), count what merging did, read judgements from
a journal, a graded queue TSV or a qrels file (exporting them as TREC qrels or BEIR TSV: :mod:`diagnose.io.qrels_writers`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from diagnose.data import DataError, Qrels, ValidationReport
from diagnose.io import check_input_path, read_qrels
from diagnose.judging.journal import Journal, PathLike, qrels_of
from diagnose.judging.reading import (
    MAX_DIGITS,
    MAX_NESTING,
    is_queue_header,
    latest,
    queue_entries,
    report_torn,
)
from diagnose.runtime.lazy import pandas as pd


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
    return qrels_of(extra, "judgements")


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
    grade = dict(
        zip(
            zip(new.df["query_id"].tolist(), new.df["doc_id"].tolist(), strict=True),
            new.df["relevance"].tolist(),
            strict=True,
        )
    )
    base = qrels.df.copy()
    keys = list(zip(base["query_id"].tolist(), base["doc_id"].tolist(), strict=True))
    base["relevance"] = np.asarray(
        [
            int(grade.pop(key)) if key in grade else int(g)
            for key, g in zip(keys, base["relevance"].tolist(), strict=True)
        ],
        dtype=np.int64,
    )
    added = qrels_of(grade, "").df
    df = pd.concat([base, added], ignore_index=True) if len(added) else base.reset_index(drop=True)
    df["relevance"] = df["relevance"].astype(np.int64)
    if report is not None:
        report.add(
            "judgements_merged",
            counts.sentence(),
            severity="info",
            file=counts.source,
            count=max(1, counts.judgements),
        )
    source = " + ".join(s for s in (qrels.source, counts.source) if s)
    return Qrels(df, source)


def read_judgements(path: PathLike, *, report: ValidationReport | None = None) -> Qrels:
    """New judgements from a file: a :class:`Journal` (JSON lines with a ``"grade"``), a judging queue TSV written by
    ``diagnose judge-queue`` with its ``grade`` column filled in (rows left empty or ``skip`` are not judgements), or
    any qrels format (:func:`diagnose.io.read_qrels`: BEIR TSV, TREC qrels, JSONL with ``"relevant"``).

    Journals and queue TSVs go through one reader (:mod:`diagnose.judging.reading`): a torn line anywhere is
    ignored and counted, hostile lines are refused with a message, the last judgement of a pair wins and pairs
    graded differently are reported."""

    check_input_path(path, "a judgement journal (JSONL), a graded judge-queue TSV or a qrels file")
    with open(path, "rb") as f:
        head = f.read(65536)
    kind = _kind_of(head)
    if kind == "queue":
        return _read_graded_queue(Path(path), report)
    if kind == "journal":
        return Journal(path).as_qrels(report)
    return read_qrels(path, report=report)


def _kind_of(head: bytes) -> str:
    """``"queue"`` (the judge-queue header first), ``"journal"`` (JSON object lines with a ``"grade"`` key: the
    first line that reads decides, so a torn line, the first one included, does not; an empty file too) or
    ``"qrels"``."""
    lines = [line for line in head.split(b"\n") if line.strip() and not line.lstrip().startswith(b"#")]
    if not lines:
        return "journal"
    if is_queue_header(lines[0]):
        return "queue"
    for line in lines:
        if line.lstrip().startswith(b"{"):
            obj = _sniffed(line)
            if isinstance(obj, dict):
                return "journal" if "grade" in obj else "qrels"
    return "journal" if any(b'"grade"' in line or b'"doc_id"' in line for line in lines) else "qrels"


def _sniffed(line: bytes) -> object:
    """The JSON value of a line, for sniffing only: None when it does not read (the reader then says why)."""
    if line.count(b"[") + line.count(b"{") > MAX_NESTING:
        return None
    try:
        return json.loads(line.decode("utf-8"), parse_int=lambda t: 0 if len(t) > MAX_DIGITS else int(t))
    except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None


def _read_graded_queue(path: Path, report: ValidationReport | None) -> Qrels:
    """The graded rows of a ``diagnose judge-queue`` TSV (see :func:`read_judgements`)."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"{path}: cannot read the graded judging queue ({e.strerror or e}).") from None
    entries, torn, ungraded, skipped = queue_entries(raw, str(path))
    report_torn(report, "queue_torn_line", str(path), torn, "judging queue")
    if report is not None and (ungraded or skipped):
        report.add(
            "queue_rows_not_graded",
            f"{ungraded} rows of the judging queue have no grade and {skipped} were skipped: not judgements",
            severity="info",
            file=str(path),
            count=ungraded + skipped,
        )
    return qrels_of(latest(entries, str(path), report), str(path))
