"""The one reader of judgements (issue 22): journals and graded queue TSVs with a torn line anywhere, hostile lines
(deep nesting, giant numbers), grades in ASCII digits only, conflicting grades reported, ids that round-trip through
the queue TSV, and a journal that cannot be written. Real files in ``tmp_path``."""

from __future__ import annotations

import csv
import errno
import io
import json
from pathlib import Path

import numpy as np
import pytest

from diagnose import judging
from diagnose.cli import main
from diagnose.data import DataError, ValidationReport
from diagnose.embed import KeywordEncoder

HEADER = "query_id\tquery_text\tdoc_id\tdoc_text\tpriority\treason\tgrade\n"


def _row(q: str, d: str, grade: str, priority: int = 1) -> str:
    return f"{q}\tsome query\t{d}\tsome document\t{priority}\tin the top 10 of 1 run\t{grade}\n"


def _journal(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def _line(q: str, d: str, grade: object) -> bytes:
    return (
        json.dumps({"query_id": q, "doc_id": d, "grade": grade, "time": "", "judge": "t"}) + "\n"
    ).encode()


# ------------------------------------------------------------------------------------------------ torn lines


@pytest.mark.parametrize(
    "torn",
    [
        b'{"query_id": "q1", "doc_',  # a write cut short
        b"\x00\x00\x00\x00\x00\x00",  # a power cut: the file grew but the bytes never came
    ],
)
def test_a_torn_first_line_is_read_the_same_by_the_journal_and_by_extra_qrels(tmp_path, torn):
    path = _journal(tmp_path / "j.jsonl", torn + b"\n", _line("q1", "d1", 2), _line("q2", "d2", 0))
    expected = {"q1": {"d1": 2}, "q2": {"d2": 0}}
    assert judging.Journal(path).as_qrels().as_dict() == expected
    report = ValidationReport()
    # on 8fa1f16 the format was sniffed from line 1 only: read as qrels, refused
    assert judging.read_judgements(path, report=report).as_dict() == expected
    (p,) = report.by_code("journal_torn_line")
    assert p.examples == ("line 1",)


def test_a_torn_line_anywhere_in_a_graded_queue_is_counted_and_the_rest_read(tmp_path):
    path = tmp_path / "graded.tsv"
    path.write_text(
        HEADER
        + _row("q1", "d1", "2")
        + "q1\tsome query\td2\tsome doc"  # torn in the middle of a row: 4 of 7 fields
        + "\n"
        + _row("q2", "d3", "1")
        + 'q3\t"an unclosed quote\td4\tdoc\t3\treason\t1\n'  # an edit that left a quote open
        + "q3\tsome query\td5\tsome document\t4\tin the top"  # the last row, cut
    )
    report = ValidationReport()
    qrels = judging.read_judgements(path, report=report)
    assert qrels.as_dict() == {"q1": {"d1": 2}, "q2": {"d3": 1}}
    (p,) = report.by_code("queue_torn_line")
    assert p.count == 3 and p.examples == ("line 3", "line 5", "line 6")


# ------------------------------------------------------------------------------------------ hostile lines


@pytest.mark.parametrize(
    ("grade_text", "message"),
    [
        (b"[" * 100_000 + b"]" * 100_000, r"line 2: the line is JSON nested deeper than 16 levels"),
        (b"9" * 5000, r"line 2: the line holds a number of 5,000 digits"),
    ],
)
def test_nested_json_and_giant_numbers_are_refused_with_a_message(tmp_path, grade_text, message):
    hostile = b'{"query_id": "q1", "doc_id": "d2", "grade": ' + grade_text + b"}\n"
    path = _journal(tmp_path / "j.jsonl", _line("q1", "d1", 1), hostile)
    # on 8fa1f16: RecursionError / ValueError, internal errors
    with pytest.raises(DataError, match=message) as err:
        judging.Journal(path).judgements()
    assert err.value.param == "journal"
    with pytest.raises(DataError, match=message):
        judging.read_judgements(path)
    assert len(str(err.value)) < 400  # the message does not quote the line


@pytest.mark.parametrize("grade", ["²", "٣", "３", "1²", "9" * 5000, "-1", "4", "3.0"])
def test_queue_grades_are_read_from_ascii_digits_only(tmp_path, grade):
    path = tmp_path / "graded.tsv"
    path.write_text(HEADER + _row("q1", "d1", "2") + _row("q1", "d2", grade, 2), encoding="utf-8")
    # ² and 1² crashed int() on 8fa1f16; ٣ and ３ were read as 3 (str.isdigit); 5,000 digits crashed int()
    with pytest.raises(
        DataError, match=r"graded.tsv, line 3: the grade (.* is not 0, 1, 2, 3 or skip|must be)"
    ):
        judging.read_judgements(path)


def test_ascii_grades_and_skips_are_read(tmp_path):
    path = tmp_path / "graded.tsv"
    path.write_text(
        HEADER
        + _row("q1", "d1", " 3 ")
        + _row("q1", "d2", "SKIP", 2)
        + _row("q1", "d3", "", 3)
        + _row("q1", "d4", "0", 4)
    )
    report = ValidationReport()
    assert judging.read_judgements(path, report=report).as_dict() == {"q1": {"d1": 3, "d4": 0}}
    assert report.by_code("queue_rows_not_graded")[0].count == 2  # one skipped, one left empty


# ------------------------------------------------------------------------------------------------ conflicts


def test_conflicting_grades_in_a_queue_are_reported_and_the_last_wins(tmp_path):
    path = tmp_path / "graded.tsv"
    path.write_text(
        HEADER
        + _row("q1", "d1", "3")
        + _row("q2", "d2", "1", 2)
        + _row("q1", "d1", "0", 3)
        + _row("q2", "d2", "1", 4)
    )
    report = ValidationReport()
    # q1 d1 graded 3 (line 2) then 0 (line 4): the last line wins; q2 d2 graded 1 twice is no conflict
    assert judging.read_judgements(path, report=report).as_dict() == {"q1": {"d1": 0}, "q2": {"d2": 1}}
    (p,) = report.by_code("judgement_conflict")
    assert p.severity == "warning" and p.count == 1
    assert p.examples == ("q1 d1: 3 (line 2), then 0 (line 4); kept 0",)


def test_conflicting_grades_in_a_journal_are_reported(tmp_path):
    j = judging.Journal(tmp_path / "j.jsonl")
    j.add("q1", "d1", 3, judge="ann")
    j.add("q1", "d1", 0, judge="bob")
    j.add("q1", "d2", 1)
    j.add("q1", "d2", "skip")  # a skip withdraws the grade: not a second grade
    report = ValidationReport()
    assert j.judgements(report) == {("q1", "d1"): 0, ("q1", "d2"): "skip"}
    assert report.by_code("judgement_conflict")[0].examples == ("q1 d1: 3 (line 1), then 0 (line 2); kept 0",)


# ------------------------------------------------------------------------------------------ ids round-trip


def test_ids_with_quotes_round_trip_through_the_judge_queue_tsv(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    docs = {
        '"d1"': "solar panel installation guide",
        "d'2": "solar energy tax credit",
        'd"3': "wind turbines",
    }
    queries = {'q"1': "solar panel installation"}
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in docs.items())
    )
    (tmp_path / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    enc = KeywordEncoder()
    np.save(tmp_path / "docs.npy", enc.encode(list(docs.values())))
    np.save(tmp_path / "queries.npy", enc.encode(list(queries.values())))
    (tmp_path / "doc_ids.txt").write_text("\n".join(docs) + "\n")
    (tmp_path / "query_ids.txt").write_text("\n".join(queries) + "\n")
    code = main(
        [
            "judge-queue",
            "--queries",
            str(tmp_path / "queries.jsonl"),
            "--corpus",
            str(tmp_path / "corpus.jsonl"),
            "--k",
            "3",
            "--out",
            str(tmp_path / "queue.tsv"),
            "--doc-embeddings",
            str(tmp_path / "docs.npy"),
            "--doc-ids",
            str(tmp_path / "doc_ids.txt"),
            "--query-embeddings",
            str(tmp_path / "queries.npy"),
            "--query-ids",
            str(tmp_path / "query_ids.txt"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    # a judge grades every pair in a spreadsheet, which reads and saves the TSV with CSV quoting
    rows = list(csv.reader(io.StringIO((tmp_path / "queue.tsv").read_text()), delimiter="\t"))
    assert {(r[0], r[2]) for r in rows[1:]} == {('q"1', d) for d in docs}  # the ids as they are
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(rows[0])
    writer.writerows([*r[:-1], "2"] for r in rows[1:])
    (tmp_path / "graded.tsv").write_text(out.getvalue())
    # on 8fa1f16 the ids came back as "q""1": judgements on ids that do not exist
    assert judging.read_judgements(tmp_path / "graded.tsv").as_dict() == {'q"1': dict.fromkeys(docs, 2)}


def test_the_queue_writer_refuses_an_id_with_a_line_break():
    import pandas as pd

    table = pd.DataFrame([{c: "x" for c in judging.QUEUE_TSV_COLUMNS} | {"doc_id": "d\n1"}])
    with pytest.raises(DataError, match=r"the doc_id 'd\\n1' contains a line break"):
        judging.write_queue_tsv(table)


# --------------------------------------------------------------------------------------- writing the journal


def test_a_journal_that_cannot_be_written_says_the_judgement_was_not_saved(tmp_path, monkeypatch):
    (tmp_path / "not_a_folder").write_text("a file")
    blocked = judging.Journal(tmp_path / "not_a_folder" / "judgements.jsonl")
    assert blocked.judgements() == {}  # reading a journal that is not there yet is fine
    with pytest.raises(DataError, match=r"cannot write the journal .*q1 / d1 = 2 was not saved") as err:
        blocked.add("q1", "d1", 2)  # on 8fa1f16: FileExistsError, a traceback in the app
    assert err.value.param == "journal"

    def read_only(fd: int) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("diagnose.judging.journal.os.fsync", read_only)
    with pytest.raises(
        DataError, match=r"\(Read-only file system\), so the judgement q1 / d2 = 1 was not saved"
    ):
        judging.Journal(tmp_path / "j.jsonl").add("q1", "d2", 1)
