"""The corpus: :func:`read_corpus` from a JSONL / CSV / TSV / Parquet file (:mod:`diagnose.io.records`) or from a
folder of ``.txt`` / ``.md`` files."""

from __future__ import annotations

import codecs
import os
import re
import stat
from pathlib import Path

from diagnose.data import Corpus, ValidationReport
from diagnose.io.decoding import refuse_decoding_collisions
from diagnose.io.files import (
    PathLike,
    check_confined,
    check_input_path,
    file_size,
    max_input_bytes,
    os_error,
    stat_path,
    too_big_fix,
)
from diagnose.io.formats import CORPUS_FORMATS, CORPUS_ID_FIELDS, CORPUS_TEXT_FIELDS, CORPUS_TITLE_FIELDS
from diagnose.io.messages import fatal_error, plural_of, verb
from diagnose.io.records import finish_records, read_records
from diagnose.runtime.lazy import pandas as pd

_TEXT_SUFFIXES = (".txt", ".md")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$")


@refuse_decoding_collisions(("doc_id",))
def read_corpus(
    path: PathLike,
    *,
    id_field: str | None = None,
    text_field: str | None = None,
    title_field: str | None = None,
    report: ValidationReport | None = None,
) -> Corpus:
    """Read a corpus: BEIR JSONL, CSV/TSV/Parquet, or a folder of ``.txt``/``.md`` files.

    Columns: ``doc_id``, ``title``, ``text`` and every other field as a column (``metadata`` flattened). The id,
    text and title fields are auto-detected (``_id|id|doc_id|docid``, ``text|body|content|contents``, ``title``;
    case-insensitive) unless given. Lines that cannot be read, and rows without an id, are skipped and counted;
    a repeated id keeps its first document (warning); documents with empty title and text are kept and counted.
    """
    report = report if report is not None else ValidationReport()
    file = str(path)
    p = Path(path)
    fields = (id_field, text_field, title_field)
    if stat.S_ISDIR(check_input_path(p, CORPUS_FORMATS, folder=None).st_mode):
        df, where = _read_text_folder(p, file, report), None
    else:
        df, where = read_records(p, file, report, CORPUS_FORMATS, "corpus")
    return finish_records(
        df, file, report, "corpus", fields, CORPUS_ID_FIELDS, CORPUS_TEXT_FIELDS, CORPUS_TITLE_FIELDS, where
    )


def _read_text_folder(root: Path, file: str, report: ValidationReport) -> pd.DataFrame:
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    ignored: list[str] = []
    non_utf8: list[str] = []
    limit = max_input_bytes()
    total = 0
    for p, st in _walk_folder(root, file):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or stat.S_ISDIR(st.st_mode):
            continue
        if not stat.S_ISREG(st.st_mode):
            ignored.append(f"{rel.as_posix()} (not a regular file)")
            continue
        if p.suffix.lower() not in _TEXT_SUFFIXES:
            ignored.append(rel.as_posix())
            continue
        total += st.st_size
        if total > limit:
            raise fatal_error(
                file,
                None,
                f"the .txt/.md files of the corpus folder add up to more than the input limit of {file_size(limit)}",
                f"at {rel.as_posix()}",
                f"a corpus of at most {limit} bytes",
                too_big_fix(),
            )
        content, is_utf8 = _read_text_file(p)
        if not is_utf8:
            non_utf8.append(rel.as_posix())
        title, text = _split_markdown_title(content) if p.suffix.lower() == ".md" else ("", content)
        ids.append(rel.as_posix())
        titles.append(title)
        texts.append(text.strip())
    _report_folder(ignored, non_utf8, bool(ids), file, report)
    return pd.DataFrame({"doc_id": pd.Series(ids, dtype="str"), "title": titles, "text": texts})


def _read_text_file(p: Path) -> tuple[str, bool]:
    """A ``.txt`` / ``.md`` file's text (BOM dropped, CRLF as LF) and whether it was UTF-8 (else decoded with
    replacement characters)."""
    expected = "a readable .txt or .md file in the corpus folder"
    check_confined(p, expected)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise os_error(str(p), e, expected) from None
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        content, is_utf8 = raw.decode("utf-8"), True
    except UnicodeDecodeError:
        content, is_utf8 = raw.decode("utf-8", errors="replace"), False
    return content.replace("\r\n", "\n"), is_utf8


def _report_folder(
    ignored: list[str], non_utf8: list[str], any_text: bool, file: str, report: ValidationReport
) -> None:
    """Count the files of a corpus folder that were not read, or not UTF-8, and a folder without text files."""
    if ignored:
        report.add(
            "ignored_files",
            f"{plural_of(len(ignored), 'file')} in the corpus folder {verb(len(ignored), 'is', 'are')} not .txt/.md and {verb(len(ignored), 'was', 'were')} not read",
            severity="info",
            file=file,
            count=len(ignored),
            examples=ignored,
        )
    if non_utf8:
        report.add(
            "non_utf8",
            f"{plural_of(len(non_utf8), 'file')} {verb(len(non_utf8), 'contains', 'contain')} bytes that are not UTF-8; "
            f"{verb(len(non_utf8), 'it was', 'they were')} decoded with U+FFFD replacement characters",
            file=file,
            count=len(non_utf8),
            examples=non_utf8,
        )
    if not any_text:
        report.add("empty_file", "the corpus folder has no .txt or .md files", file=file)


def _walk_folder(root: Path, file: str) -> list[tuple[Path, os.stat_result]]:
    """Every entry below ``root`` (sorted like ``sorted(root.rglob("*"))``; symbolic links to folders are not
    followed) with its ``os.stat``. A folder or entry that cannot be read is a DataError naming it."""
    expected = "a corpus folder whose files and subfolders can be read"
    out: list[tuple[Path, os.stat_result]] = []
    errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=errors.append):
        if errors:
            break
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]  # hidden folders are skipped, not walked
        for name in (*dirnames, *filenames):
            p = Path(dirpath) / name
            st = stat_path(p, expected)
            if st is None:  # a dangling symbolic link
                st = os.lstat(p)
            out.append((p, st))
    if errors:
        e = errors[0]
        raise os_error(str(e.filename or file), e, expected)
    out.sort(key=lambda item: item[0])
    return out


def _split_markdown_title(content: str) -> tuple[str, str]:
    """(title, text): the first ATX heading is the title; it leaves the text only when it is the first line."""
    lines = content.split("\n")
    first_nonblank = next((i for i, line in enumerate(lines) if line.strip()), None)
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if m:
            if i == first_nonblank:
                return m.group(1), "\n".join(lines[i + 1 :])
            return m.group(1), content
    return "", content
