"""The readers against hostile and odd inputs (issue 10, and what tests/test_fuzz_readers.py found): numbers
out of range, Unicode digits, FIFOs, size limits, lone CRs and repeated column names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from io_testing import FIX, write

import diagnose.io as dio
from diagnose.data import DataError, ValidationReport
from diagnose.io import read_corpus, read_qrels, read_run


def test_csv_line_numbers_follow_quoted_newlines_and_skipped_rows(tmp_path):
    # line 1 header; d1 spans lines 2-3; line 4 is short (skipped); line 6 has no id
    f = write(tmp_path / "c.csv", '_id,title,text\nd1,A,"multi\nline"\nd2,B\nd3,C,ok\n,D,no id\n')
    report = ValidationReport()
    df = read_corpus(f, report=report).df
    assert df[["doc_id", "text"]].values.tolist() == [["d1", "multi\nline"], ["d3", "ok"]]
    assert report.by_code("malformed_line")[0].examples == ('line 4: "d2,B"',)
    assert report.by_code("missing_id")[0].examples == ("line 6",)


BIG = "99999999999999999999999"  # 23 digits: more than int64 (19 digits) holds


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("q.tsv", f"query-id\tcorpus-id\tscore\nq\ta\t1\nq\tb\t{BIG}\n", 3),
        ("q.trec", f"q 0 a 1\nq 0 b -{BIG}\n", 2),
        ("q.trec", "q 0 a 1\nq 0 b 9223372036854775808\n", 2),  # 2**63: one past the int64 maximum
        ("q.trec", "q 0 a 1\nq 0 b 1e30\n", 2),  # an integral float that no int64 holds
        (
            "q.jsonl",
            f'{{"query_id": "q", "relevant": {{"a": 1}}}}\n{{"query_id": "q", "relevant": {{"b": {BIG}}}}}\n',
            2,
        ),
        ("q.jsonl", '{"query_id": "q", "relevant": {"b": ' + "1" + "0" * 400 + "}}\n", 1),  # > float max
        ("q.jsonl", '{"query_id": "q", "relevant": {"b": "' + BIG + '"}}\n', 1),
    ],
)
def test_qrels_grade_out_of_int64_is_fatal_with_line(tmp_path, name, text, line, both_paths):
    f = write(tmp_path / name, text)
    with pytest.raises(DataError, match=rf"{name.replace('.', '[.]')}:{line}: .*out of range") as err:
        read_qrels(f)
    assert "64-bit" in str(err.value) and "Fix:" in str(err.value)


def test_qrels_grade_at_the_int64_limits_is_kept(tmp_path, both_paths):
    f = write(tmp_path / "q.trec", "q 0 a 9223372036854775807\nq 0 b -9223372036854775808\n")
    assert read_qrels(f).df["relevance"].tolist() == [2**63 - 1, -(2**63)]


@pytest.mark.parametrize(
    "digits", [400, 5000]
)  # 400: overflows a float; 5000: past Python's int-parsing limit
def test_jsonl_score_too_large_for_a_float_is_fatal(tmp_path, digits):
    huge = "1" + "0" * (digits - 1)
    f = write(
        tmp_path / "r.jsonl",
        '{"query_id": "q", "results": [{"doc_id": "a", "score": 1}]}\n'
        f'{{"query_id": "p", "results": [{{"doc_id": "b", "score": {huge}}}]}}\n',
    )
    with pytest.raises(DataError, match=r"r\.jsonl:2: ") as err:
        read_run(f)
    assert "Fix:" in str(err.value) and len(str(err.value)) < 1000


def test_jsonl_huge_integer_id_is_fatal_not_a_crash(tmp_path):
    f = write(tmp_path / "r.jsonl", '{"query_id": ' + "9" * 5000 + ', "doc_ids": ["a"]}\n')
    with pytest.raises(DataError, match=r"r\.jsonl:1: "):
        read_run(f)


def _fifo(path: Path) -> Path:
    """A FIFO at ``path``, opened for writing every 2 s so a reader that opened it gets EOF instead of a hang."""
    import os
    import threading
    import time

    os.mkfifo(path)

    def poke() -> None:
        for _ in range(30):
            time.sleep(2)
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                continue

    threading.Thread(target=poke, daemon=True).start()
    return path


def test_corpus_folder_counts_entries_that_are_not_regular_files(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha")
    _fifo(folder / "pipe.txt")
    report = ValidationReport()
    corpus = read_corpus(folder, report=report)
    assert corpus.df["doc_id"].tolist() == ["a.txt"]
    (p,) = report.by_code("ignored_files")
    assert p.examples == ("pipe.txt (not a regular file)",)


def test_corpus_folder_total_size_is_limited(tmp_path, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.txt", "b.txt"):
        (folder / name).write_text("x" * 600)
    monkeypatch.setenv("DIAGNOSE_MAX_INPUT_BYTES", "1000")  # each file fits, the two together do not
    with pytest.raises(
        DataError, match=r"docs: .*more than the input limit.*at b\.txt.*DIAGNOSE_MAX_INPUT_BYTES"
    ):
        read_corpus(folder)


def test_precomputed_vectors_refuse_a_fifo(tmp_path):
    from diagnose.embed import load_precomputed

    doc = tmp_path / "docs.npy"
    np.save(doc, np.eye(2, dtype=np.float32))
    ids = write(tmp_path / "ids.txt", "a\nb\n")
    fifo = _fifo(tmp_path / "queries.npy")
    with pytest.raises(DataError, match=r"queries\.npy: is a named pipe \(FIFO\)"):
        load_precomputed(doc, fifo, ids, ids)


@pytest.mark.parametrize("value", ["lots", "0", "-5", "1e9", "８"])
def test_max_input_bytes_env_must_be_a_positive_integer(monkeypatch, value):
    monkeypatch.setenv("DIAGNOSE_MAX_INPUT_BYTES", value)
    with pytest.raises(DataError, match="DIAGNOSE_MAX_INPUT_BYTES=.*Fix:"):
        read_run(FIX / "run.trec")


def test_max_input_bytes_env_raises_or_lowers_the_limit(monkeypatch):
    monkeypatch.delenv("DIAGNOSE_MAX_INPUT_BYTES", raising=False)
    assert dio.max_input_bytes() == dio.DEFAULT_MAX_INPUT_BYTES == 4 * 2**30
    monkeypatch.setenv("DIAGNOSE_MAX_INPUT_BYTES", str(8 * 2**30))
    assert dio.max_input_bytes() == 8 * 2**30
    size = (FIX / "run.trec").stat().st_size
    monkeypatch.setenv("DIAGNOSE_MAX_INPUT_BYTES", str(size))  # exactly the size: allowed
    assert len(read_run(FIX / "run.trec")) == 6
    monkeypatch.setenv("DIAGNOSE_MAX_INPUT_BYTES", str(size - 1))
    with pytest.raises(
        DataError, match=rf"run\.trec: is {size} bytes, more than the input limit of {size - 1} bytes"
    ):
        read_run(FIX / "run.trec")


# Python's float()/int() read any Unicode digit ('９９' -> 99) and underscores ('1_0' -> 10); trec_eval's atof/atol
# read '９９' as 0 and '1_0' as 1. Refused rather than guessed.
@pytest.mark.parametrize("score", ["９９", "٣", "1_0", "²"])
def test_trec_run_non_ascii_or_underscore_score_is_fatal(tmp_path, score, both_paths):
    f = write(tmp_path / "r.trec", f"q Q0 a 1 1 t\nq Q0 b 2 {score} t\n")
    with pytest.raises(
        DataError, match=rf"r\.trec:2: the score \(5th field\) is not a number: '{score}'"
    ) as err:
        read_run(f)
    assert ("non-ASCII" in str(err.value)) == (not score.isascii())


def test_csv_run_non_ascii_score_names_its_line(tmp_path, both_paths):
    f = write(tmp_path / "r.csv", "query_id,doc_id,score\nq,a,1\nq,b,2\nq,c,９\n")
    with pytest.raises(DataError, match=r"r\.csv:4: .*'９'.*non-ASCII"):
        read_run(f)


@pytest.mark.parametrize("grade", ["１", "1_0", "٢"])
@pytest.mark.parametrize("name", ["q.trec", "q.jsonl"])
def test_qrels_non_ascii_or_underscore_grade_is_fatal(tmp_path, grade, name, both_paths):
    text = (
        f"q 0 a 1\nq 0 b {grade}\n"
        if name == "q.trec"
        else f'{{"query_id": "q", "relevant": {{"a": 1}}}}\n{{"query_id": "q", "relevant": {{"b": "{grade}"}}}}\n'
    )
    with pytest.raises(DataError, match=rf"{name.replace('.', '[.]')}:2: .*not an integer.*'{grade}'") as err:
        read_qrels(write(tmp_path / name, text))
    assert ("non-ASCII" in str(err.value)) == (not grade.isascii())


# found by tests/test_fuzz_readers.py: Python's csv module raises csv.Error on a lone CR in an unquoted field
@pytest.mark.parametrize(
    ("reader", "name", "text"),
    [
        (read_run, "r.csv", b"\x00\r\x00"),
        (read_run, "r.csv", b"query_id,doc\rid,score\nq,a,1\n"),
        (read_corpus, "c.csv", b"_id,te\rxt\nd1,x\n"),
    ],
)
def test_csv_header_with_a_lone_cr_is_a_data_error(tmp_path, reader, name, text):
    with pytest.raises(DataError, match=rf"{name.replace('.', '[.]')}:1: "):
        reader(write(tmp_path / name, text))


def test_csv_line_numbers_survive_a_lone_cr_in_a_field(tmp_path, both_paths):
    report = ValidationReport()
    df = read_corpus(write(tmp_path / "c.csv", b"_id,text\nd1,a\rb\nd2,c\nd3\n"), report=report).df
    assert "d2" in df["doc_id"].tolist()
    assert report.by_code("malformed_line")  # the short rows are counted with a line, not a crash


# found by tests/test_fuzz_readers.py: a header with a repeated name made df[name] a DataFrame (AttributeError)
def test_repeated_field_names_keep_the_first_and_are_counted(tmp_path, both_paths):
    report = ValidationReport()
    corpus = read_corpus(write(tmp_path / "c.csv", "_id,text,text\nd1,first,second\n"), report=report)
    assert corpus.df["text"].tolist() == ["first"]
    (p,) = report.by_code("duplicate_field")
    assert p.examples == ("'text'",)
    with pytest.raises(DataError, match="no id field found"):  # the fuzzed case: a header of two empty names
        read_corpus(write(tmp_path / "e.trec", ',\r\n{"_id": "d1"}\n'))


def test_csv_run_with_a_repeated_column_is_fatal(tmp_path):
    with pytest.raises(DataError, match=r"r\.csv:1: the header names 'score' more than once"):
        read_run(write(tmp_path / "r.csv", "query_id,doc_id,score,score\nq,a,1,2\n"))
