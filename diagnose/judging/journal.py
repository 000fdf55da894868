"""The journal of judgements: one JSON line per judgement, appended and fsynced at once, never rewritten (a torn line
is ignored and counted, :mod:`.reading` reads it); where a data set's journal lives."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from diagnose.cache import default_cache_root, slug
from diagnose.data import DataError, Qrels, ValidationReport
from diagnose.judging.reading import SKIP, Entry, check_grade, check_id, journal_entries, latest, report_torn
from diagnose.runtime.lazy import pandas as pd

PathLike = str | Path

JOURNAL_ENV = "DIAGNOSE_JOURNAL"
JOURNAL_NAME = "judgements.jsonl"


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
    that is not valid JSON, wherever it is, counting it (``torn_lines``, and a ``journal_torn_line`` warning in
    ``report``). A line that is valid JSON but not a judgement (a grade of 7, no doc id), nested JSON or a giant
    number is an error naming the line: someone edited it (see :mod:`.reading`). A journal that cannot be written
    (read-only, its folder a file, a full disk) is a DataError saying the judgement was not saved.

    Later judgements of the same pair win (a ``"skip"`` after a grade withdraws the grade); a pair given two
    different grades is reported (``judgement_conflict``).
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
            "query_id": check_id(query_id, "query_id", str(self.path)),
            "doc_id": check_id(doc_id, "doc_id", str(self.path)),
            "grade": check_grade(grade, str(self.path)),
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "judge": str(judge or self.judge),
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            self._append(line)
        except OSError as e:
            raise DataError(
                f"{self.path}: cannot write the journal ({e.strerror or e}), so the judgement {record['query_id']} / "
                f"{record['doc_id']} = {record['grade']} was not saved. Fix: make the file and its folder writable, "
                f"or set {JOURNAL_ENV} to a writable file.",
                param="journal",
            ) from None
        return record

    def _append(self, line: bytes) -> None:
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
        out, self.torn_lines = journal_entries(raw, str(self.path))
        report_torn(report, "journal_torn_line", str(self.path), self.torn_lines, "journal")
        return out

    def judgements(self, report: ValidationReport | None = None) -> dict[tuple[str, str], int | str]:
        """``{(query_id, doc_id): grade}``, the latest judgement of each pair (grade 0-3 or ``"skip"``); pairs given
        different grades are reported in ``report``."""
        return latest(self.entries(report), str(self.path), report)

    def as_qrels(self, report: ValidationReport | None = None) -> Qrels:
        """The new judgements alone as :class:`Qrels` (skipped pairs left out), in journal order."""
        return qrels_of(self.judgements(report), str(self.path))

    def __len__(self) -> int:
        return len(self.entries())


def qrels_of(grades: Mapping[tuple[str, str], Any], source: str) -> Qrels:
    """``{(query_id, doc_id): grade}`` as :class:`Qrels`, in its order, skipped pairs left out."""
    items = [(str(q), str(d), g) for (q, d), g in grades.items() if g != SKIP]
    df = pd.DataFrame(
        {
            "query_id": pd.Series([q for q, _, _ in items], dtype="str"),
            "doc_id": pd.Series([d for _, d, _ in items], dtype="str"),
            "relevance": np.asarray([int(g) for _, _, g in items], dtype=np.int64),
        }
    )
    return Qrels(df, source)


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
