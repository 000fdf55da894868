"""Qrels reader: every format gives the same judgements, grades are read like trec_eval reads them, and every
validation count.

The fixtures in tests/fixtures hold the same small data set in every format (see make_fixtures.py there).
"""

from __future__ import annotations

import numpy as np
import pytest
from io_testing import FIX, codes, records, write

from diagnose.data import DataError, ValidationReport
from diagnose.io import read_qrels

QRELS = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 1), ("q2", "007", 1), ("q3", "d2", 0)]


@pytest.mark.parametrize("name", ["qrels.tsv", "qrels.trec", "qrels.jsonl"])
def test_qrels_formats_read_identical_records(name, both_paths):
    report = ValidationReport()
    qrels = read_qrels(FIX / name, report=report)
    assert qrels.df["relevance"].dtype == np.int64
    assert records(qrels.df, ["query_id", "doc_id", "relevance"]) == sorted(QRELS)
    # q3 has only a grade-0 judgement: info, not a warning
    assert codes(report) == {"query_without_relevant": 1}
    assert report.by_code("query_without_relevant")[0].examples == ("q3",)
    assert report.warnings == []


def test_qrels_jsonl_list_means_grade_1():
    df = read_qrels(FIX / "qrels_list.jsonl").df
    assert records(df, ["query_id", "doc_id", "relevance"]) == sorted(
        [(q, d, 1) for q, d, g in QRELS if g > 0]
    )


def test_qrels_graded_and_negative_grades_kept(tmp_path, both_paths):
    f = write(tmp_path / "q.trec", "1 0 a -1\n1 0 b 4\n1\t0\tc\t2\n")
    assert read_qrels(f).df["relevance"].tolist() == [-1, 4, 2]


def test_qrels_decimal_integer_grade_is_read_with_info(tmp_path, both_paths):
    f = write(tmp_path / "q.tsv", "query-id\tcorpus-id\tscore\nq\td\t1.0\nq\te\t2\n")
    report = ValidationReport()
    assert read_qrels(f, report=report).df["relevance"].tolist() == [1, 2]
    (p,) = report.by_code("decimal_grade")
    assert (p.severity, p.count, p.examples) == ("info", 1, ("line 2",))


@pytest.mark.parametrize("grade", ["1.5", "high", "nan"])
def test_qrels_non_integer_grade_is_fatal(tmp_path, grade, both_paths):
    f = write(tmp_path / "q.trec", f"q 0 a 1\nq 0 b {grade}\n")
    with pytest.raises(DataError, match=rf"q\.trec:2: the relevance grade is not an integer: '{grade}'"):
        read_qrels(f)


def test_qrels_duplicate_pair_keeps_first(tmp_path, both_paths):
    f = write(tmp_path / "q.trec", "q 0 a 1\nq 0 a 2\nq 0 b 0\n")
    report = ValidationReport()
    df = read_qrels(f, report=report).df
    assert records(df, ["query_id", "doc_id", "relevance"]) == [("q", "a", 1), ("q", "b", 0)]
    (p,) = report.by_code("duplicate_judgement")
    assert (p.count, p.examples) == (1, ("q/a",))
    assert "1 with a different grade" in p.message


def test_qrels_comments_and_blank_lines_like_trec_eval(tmp_path, both_paths):
    f = write(tmp_path / "q.trec", "# judged by x\n\nq 0 a 1\n  # another\nq 0 b 0\n")
    assert read_qrels(f).df["doc_id"].tolist() == ["a", "b"]


def test_empty_qrels_is_fatal(tmp_path):
    with pytest.raises(DataError, match=r"q\.tsv: the qrels file is empty"):
        read_qrels(write(tmp_path / "q.tsv", "\n \n"))


def test_qrels_without_header_is_read_with_info(tmp_path, both_paths):
    report = ValidationReport()
    df = read_qrels(write(tmp_path / "q.tsv", "q1\td1\t1\nq1\td2\t0\n"), report=report).df
    assert records(df, ["query_id", "doc_id", "relevance"]) == [("q1", "d1", 1), ("q1", "d2", 0)]
    assert [(p.code, p.severity) for p in report] == [("qrels_without_header", "info")]
