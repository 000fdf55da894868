"""The journal of judgements: one JSON line per judgement, appended and fsynced at once, never rewritten (a torn last
line is ignored and counted); the grades; where a data set's journal lives."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from diagnose.checks import param_error
from diagnose.data import DataError, Qrels, ValidationReport

PathLike = str | Path

GRADES = (0, 1, 2, 3)
SKIP = "skip"
JOURNAL_ENV = "DIAGNOSE_JOURNAL"
JOURNAL_NAME = "judgements.jsonl"


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
        raise param_error("grade", f"{where}: the grade must be 0, 1, 2, 3 or 'skip', got {grade!r}.")
    return int(grade)


def _check_id(value: Any, what: str, where: str) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise param_error(what, f"{where}: the {what} must be a non-empty string, got {value!r}.")
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
        return _qrels_of(self.judgements(report), str(self.path))

    def __len__(self) -> int:
        return len(self.entries())


def _qrels_of(grades: Mapping[tuple[str, str], Any], source: str) -> Qrels:
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
