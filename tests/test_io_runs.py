"""Run reader and writer: every format gives the same ranked lists, duplicates, names, scores, and the run
arguments of the command line.

The fixtures in tests/fixtures hold the same small data set in every format (see make_fixtures.py there).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from io_testing import FIX, RUN_ORDER, codes, write

from diagnose.data import DataError, Run, ValidationReport
from diagnose.io import parse_run_arg, read_run, write_trec_run

RUN_SCORES = {
    ("q1", "d3"): 0.7,
    ("q1", "d2"): 0.5,
    ("q1", "d1"): 0.5,
    ("q2", "007"): 1.2,
    ("q2", "d3"): 0.9,
    ("q2", "d1"): -0.1,
}


@pytest.mark.parametrize("name", ["run.trec", "run.trec.gz", "run.jsonl", "run.csv", "run_rank.csv"])
def test_run_formats_read_identical_records(name, both_paths):
    run = read_run(FIX / name)
    df = run.df
    assert list(df.columns) == ["query_id", "doc_id", "score", "rank"]
    assert (df["score"].dtype, df["rank"].dtype) == (np.float64, np.int64)
    assert run.ranked_lists() == RUN_ORDER
    assert {
        (q, d): s for q, d, s in df[["query_id", "doc_id", "score"]].itertuples(index=False)
    } == RUN_SCORES
    assert df.groupby("query_id")["rank"].apply(list).to_dict() == {"q1": [1, 2, 3], "q2": [1, 2, 3]}


def test_run_name_defaults_to_the_stem():
    assert read_run(FIX / "run.trec.gz").name == "run"
    assert read_run(FIX / "run.jsonl", name="mine").name == "mine"


def test_jsonl_doc_ids_get_decreasing_synthetic_scores():
    run = read_run(FIX / "run_doc_ids.jsonl")
    assert run.ranked_lists() == RUN_ORDER
    assert run.df["score"].tolist() == [-1.0, -2.0, -3.0, -1.0, -2.0, -3.0]  # -rank position


def test_trec_whitespace_variants_and_extra_fields(tmp_path, both_paths):
    # tabs, runs of spaces, CRLF, leading blanks, comments, blank lines and fields after the tag (trec_eval
    # ignores them) all read the same
    text = "# comment\r\n  q\tQ0   d1 1\t 0.5 t\r\n\nq Q0 d2 2 0.7 t junk at the end\r\n"
    report = ValidationReport()
    run = read_run(write(tmp_path / "r.trec", text), report=report)
    assert run.ranked_lists() == {"q": ["d2", "d1"]}
    (p,) = report.by_code("extra_fields_ignored")
    assert (p.severity, p.examples) == ("info", ("line 4",))


def test_a_comment_line_with_six_fields_is_skipped_like_trec_eval(tmp_path, both_paths):
    """A line starting with ``#`` parses as six fields on the fast path (its query ids are dictionary-encoded by
    the CSV reader): the reader sees the ``#`` in the chunk's dictionary and reads the file line by line."""
    rows = "".join(f"q{i % 7} Q0 d{i} {i} {1 / (i + 1)} t\n" for i in range(3000))
    text = rows + "#q0 Q0 dx 1 9 t\n" + rows.replace(" d", " e")
    run = read_run(write(tmp_path / "r.trec", text))
    assert set(run.ranked_lists()) == {f"q{i}" for i in range(7)}
    assert "dx" not in set(run.df["doc_id"])


def test_run_duplicates_keep_best_ranked_and_are_counted(tmp_path, both_paths):
    # d1 appears with 0.9 and 0.3: the 0.9 occurrence (rank 1) is kept; d2 twice with the same score
    f = write(
        tmp_path / "r.trec",
        "q Q0 d1 1 0.3 t\nq Q0 d2 2 0.5 t\nq Q0 d1 3 0.9 t\nq Q0 d2 4 0.5 t\np Q0 d1 1 1 t\n",
    )
    report = ValidationReport()
    run = read_run(f, report=report)
    assert run.ranked_lists() == {"q": ["d1", "d2"], "p": ["d1"]}
    assert run.df.loc[run.df["query_id"] == "q", "score"].tolist() == [0.9, 0.5]
    assert run.df["rank"].tolist() == [1, 2, 1]
    (p,) = report.by_code("duplicate_doc_in_run")
    assert (p.severity, p.count) == ("warning", 2)
    assert sorted(p.examples) == ["q/d1", "q/d2"]


def test_jsonl_duplicates_keep_first_in_list_order(tmp_path):
    f = write(tmp_path / "r.jsonl", json.dumps({"query_id": "q", "doc_ids": ["a", "b", "a", "c"]}) + "\n")
    report = ValidationReport()
    run = read_run(f, report=report)
    assert run.ranked_lists() == {"q": ["a", "b", "c"]}
    assert run.df["rank"].tolist() == [1, 2, 3]
    assert report.by_code("duplicate_doc_in_run")[0].examples == ("q/a",)


def test_jsonl_keeps_list_order_even_against_scores(tmp_path):
    line = {"query_id": "q", "results": [{"doc_id": "a", "score": 0.1}, {"doc_id": "b", "score": 0.9}]}
    run = read_run(write(tmp_path / "r.jsonl", json.dumps(line) + "\n"))
    assert run.ranked_lists() == {"q": ["a", "b"]}


def test_csv_with_rank_keeps_rank_order(tmp_path):
    f = write(tmp_path / "r.csv", "query_id,doc_id,score,rank\nq,a,0.1,2\nq,b,0.9,1\nq,c,0.9,3\n")
    assert read_run(f).ranked_lists() == {"q": ["b", "a", "c"]}


def test_empty_run_is_a_warning(tmp_path):
    report = ValidationReport()
    run = read_run(write(tmp_path / "r.trec", ""), report=report)
    assert len(run) == 0 and list(run.df.columns) == ["query_id", "doc_id", "score", "rank"]
    assert codes(report) == {"empty_file": 1}


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-Infinity"])
def test_non_finite_score_is_fatal_with_line(tmp_path, bad, both_paths):
    f = write(tmp_path / "r.trec", f"q Q0 a 1 1 t\n\nq Q0 b 2 {bad} t\n")
    with pytest.raises(DataError, match=rf"r\.trec:3: the score is {bad}, which cannot be ordered"):
        read_run(f)


def test_write_trec_run_round_trip(tmp_path):
    run = read_run(FIX / "run.trec")
    for name in ("out.trec", "out.trec.gz"):
        write_trec_run(run, tmp_path / name, tag="my run")
        back = read_run(tmp_path / name)
        pd.testing.assert_frame_equal(back.df, run.df)
    first = (tmp_path / "out.trec").read_text().splitlines()[0]
    assert first == "q1 Q0 d3 1 0.7 my_run"


def test_write_trec_run_refuses_ids_with_spaces(tmp_path):
    run = Run.from_ranked_lists("r", {"q 1": [("d", 1.0)]})
    with pytest.raises(DataError, match="contains whitespace"):
        write_trec_run(run, tmp_path / "r.trec")


def test_parse_run_arg(tmp_path):
    assert parse_run_arg("runs/bm25.trec.gz") == ("bm25", "runs/bm25.trec.gz")
    assert parse_run_arg("dense=runs/x.jsonl") == ("dense", "runs/x.jsonl")
    assert parse_run_arg("run.v2.trec") == ("run.v2", "run.v2.trec")
    assert parse_run_arg("runs/a=b.trec") == ("a=b", "runs/a=b.trec")  # '=' after a '/' is part of the path
    existing = write(tmp_path / "k=v.trec", "")
    assert parse_run_arg(str(existing)) == ("k=v", str(existing))
    with pytest.raises(DataError, match="run name before '=' is empty"):
        parse_run_arg("=runs/x.trec")


def test_csv_run_with_rank_only_gets_scores_minus_rank(tmp_path):
    run = read_run(write(tmp_path / "r.csv", "qid,docid,rank\nq,b,2\nq,a,1\n"))
    assert run.ranked_lists() == {"q": ["a", "b"]}
    assert run.df["score"].tolist() == [-1.0, -2.0]


def test_csv_run_non_integer_rank_is_fatal(tmp_path):
    with pytest.raises(DataError, match=r"r\.csv:3: the rank is not an integer"):
        read_run(write(tmp_path / "r.csv", "query_id,doc_id,score,rank\nq,a,1,1\nq,b,0.5,1.5\n"))


def test_parse_run_arg_survives_paths_the_os_refuses():
    long = "n=" + "x" * 300 + ".trec"
    assert parse_run_arg(long) == ("n", "x" * 300 + ".trec")
    assert parse_run_arg("n=a\0b.trec") == ("n", "a\0b.trec")
