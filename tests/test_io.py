"""Readers: every format gives the same records, trec_eval's run order, and every validation count.

The fixtures in tests/fixtures hold the same small data set in every format (see make_fixtures.py there).
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diagnose.io as dio
from diagnose.data import DataError, Run, ValidationReport
from diagnose.io import (
    load_dataset,
    parse_run_arg,
    read_corpus,
    read_qrels,
    read_queries,
    read_run,
    trec_order,
    write_trec_run,
)

FIX = Path(__file__).resolve().parent / "fixtures"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TREC_TESTS = SHARED / "trec_eval_tests"

# the fixture data (tests/fixtures/make_fixtures.py)
CORPUS = pd.DataFrame(
    [
        ("d1", "Alpha", "The first document.", "x"),
        ("d2", "", 'Second doc, with a comma and "quotes".', "y"),
        ("d3", "Gamma", "Third document", "x"),
        ("007", "Leading zeros", "An id that looks like a number", "z"),
    ],
    columns=["doc_id", "title", "text", "area"],
)
QRELS = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d3", 1), ("q2", "007", 1), ("q3", "d2", 0)]
# q1: d1 0.5, d2 0.5, d3 0.7 -> d3 first (0.7), then the 0.5 tie broken by doc id descending: d2, d1
# q2: 007 1.2, d3 0.9, d1 -0.1 -> 007, d3, d1
RUN_ORDER = {"q1": ["d3", "d2", "d1"], "q2": ["007", "d3", "d1"]}
RUN_SCORES = {
    ("q1", "d3"): 0.7,
    ("q1", "d2"): 0.5,
    ("q1", "d1"): 0.5,
    ("q2", "007"): 1.2,
    ("q2", "d3"): 0.9,
    ("q2", "d1"): -0.1,
}


def _records(df: pd.DataFrame, cols: list[str]) -> list[tuple]:
    return sorted(df[cols].itertuples(index=False, name=None))


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _codes(report: ValidationReport) -> dict[str, int]:
    return {p.code: p.count for p in report.problems}


@pytest.fixture(params=[True, False], ids=["fast", "line-by-line"])
def both_paths(request, monkeypatch):
    """Run a test with the pyarrow fast paths and with the line-by-line paths: they must agree."""
    monkeypatch.setattr(dio, "_FAST", request.param)
    return request.param


# ---------------------------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus.csv", "corpus.tsv", "corpus.parquet"])
def test_corpus_formats_read_identical_records(name, both_paths):
    report = ValidationReport()
    corpus = read_corpus(FIX / name, report=report)
    assert list(corpus.df.columns) == ["doc_id", "title", "text", "area"]
    assert corpus.df.to_dict("records") == CORPUS.to_dict("records")  # same rows, same order
    assert all(isinstance(x, str) for x in corpus.df["doc_id"])  # "007" stays "007"
    assert len(report) == 0


def test_corpus_metadata_is_flattened_into_columns(tmp_path):
    f = _write(
        tmp_path / "c.jsonl",
        '{"_id": "a", "text": "t", "metadata": {"year": 2020, "src": {"site": "w"}, "text": "shadow"}}\n',
    )
    df = read_corpus(f).df
    # metadata.year -> year; nested metadata.src.site -> src.site; metadata.text would shadow text: keeps its path
    assert df.loc[0, "year"] == 2020
    assert df.loc[0, "src.site"] == "w"
    assert df.loc[0, "metadata.text"] == "shadow" and df.loc[0, "text"] == "t"


def test_corpus_folder(both_paths):
    report = ValidationReport()
    df = read_corpus(FIX / "corpus_folder", report=report).df.set_index("doc_id")
    # ids are paths relative to the folder with forward slashes, files in sorted path order
    assert list(df.index) == ["007.md", "d1.md", "d2.txt", "sub/d3.md"]
    # a first-line heading is the title and leaves the text; trailing #s are not part of it
    assert df.loc["d1.md", ["title", "text"]].tolist() == ["Alpha", "The first document."]
    assert df.loc["007.md", ["title", "text"]].tolist() == ["Leading zeros", "An id that looks like a number"]
    # .txt: no title; a heading that is not the first line is the title but the text is kept whole
    assert df.loc["d2.txt", "title"] == ""
    assert df.loc["sub/d3.md", ["title", "text"]].tolist() == ["Gamma", "Gamma\n\n## Gamma"]
    assert _codes(report) == {"ignored_files": 1}  # notes.json
    assert report.by_code("ignored_files")[0].severity == "info"


def test_corpus_field_options_and_autodetect(tmp_path):
    f = _write(tmp_path / "c.csv", "ID,Heading,Body,lang\n1,H,B,en\n")
    df = read_corpus(f).df  # ID / Body found case-insensitively; Heading is not a known title name
    assert df.to_dict("records") == [{"doc_id": "1", "title": "", "text": "B", "Heading": "H", "lang": "en"}]
    df = read_corpus(f, title_field="Heading", text_field="lang").df
    assert df.loc[0, ["title", "text"]].tolist() == ["H", "en"]
    with pytest.raises(
        DataError, match=r"c\.csv: has no title field 'Name' \(fields: ID, Heading, Body, lang\)"
    ):
        read_corpus(f, title_field="Name")


def test_corpus_gzip(tmp_path):
    f = tmp_path / "corpus.jsonl.gz"
    f.write_bytes(gzip.compress((FIX / "corpus.jsonl").read_bytes()))
    assert read_corpus(f).df.to_dict("records") == CORPUS.to_dict("records")


# ---------------------------------------------------------------------------------------------- queries


def test_queries_formats(both_paths):
    jl = read_queries(FIX / "queries.jsonl").df
    tsv = read_queries(FIX / "queries.tsv").df
    assert _records(jl, ["query_id", "text"]) == _records(tsv, ["query_id", "text"])
    assert jl["area"].tolist() == ["a", "b", "a"]  # metadata.area -> area
    assert list(tsv.columns) == ["query_id", "text"]


def test_queries_tsv_header_and_tabs_in_text(tmp_path):
    f = _write(tmp_path / "q.tsv", "query_id\ttext\nq1\ta\tb\n")  # text = everything after the first tab
    assert read_queries(f).df.to_dict("records") == [{"query_id": "q1", "text": "a\tb"}]


# ---------------------------------------------------------------------------------------------- qrels


@pytest.mark.parametrize("name", ["qrels.tsv", "qrels.trec", "qrels.jsonl"])
def test_qrels_formats_read_identical_records(name, both_paths):
    report = ValidationReport()
    qrels = read_qrels(FIX / name, report=report)
    assert qrels.df["relevance"].dtype == np.int64
    assert _records(qrels.df, ["query_id", "doc_id", "relevance"]) == sorted(QRELS)
    # q3 has only a grade-0 judgement: info, not a warning
    assert _codes(report) == {"query_without_relevant": 1}
    assert report.by_code("query_without_relevant")[0].examples == ("q3",)
    assert report.warnings == []


def test_qrels_jsonl_list_means_grade_1():
    df = read_qrels(FIX / "qrels_list.jsonl").df
    assert _records(df, ["query_id", "doc_id", "relevance"]) == sorted(
        [(q, d, 1) for q, d, g in QRELS if g > 0]
    )


def test_qrels_graded_and_negative_grades_kept(tmp_path, both_paths):
    f = _write(tmp_path / "q.trec", "1 0 a -1\n1 0 b 4\n1\t0\tc\t2\n")
    assert read_qrels(f).df["relevance"].tolist() == [-1, 4, 2]


def test_qrels_decimal_integer_grade_is_read_with_info(tmp_path, both_paths):
    f = _write(tmp_path / "q.tsv", "query-id\tcorpus-id\tscore\nq\td\t1.0\nq\te\t2\n")
    report = ValidationReport()
    assert read_qrels(f, report=report).df["relevance"].tolist() == [1, 2]
    (p,) = report.by_code("decimal_grade")
    assert (p.severity, p.count, p.examples) == ("info", 1, ("line 2",))


@pytest.mark.parametrize("grade", ["1.5", "high", "nan"])
def test_qrels_non_integer_grade_is_fatal(tmp_path, grade, both_paths):
    f = _write(tmp_path / "q.trec", f"q 0 a 1\nq 0 b {grade}\n")
    with pytest.raises(DataError, match=rf"q\.trec:2: the relevance grade is not an integer: '{grade}'"):
        read_qrels(f)


def test_qrels_duplicate_pair_keeps_first(tmp_path, both_paths):
    f = _write(tmp_path / "q.trec", "q 0 a 1\nq 0 a 2\nq 0 b 0\n")
    report = ValidationReport()
    df = read_qrels(f, report=report).df
    assert _records(df, ["query_id", "doc_id", "relevance"]) == [("q", "a", 1), ("q", "b", 0)]
    (p,) = report.by_code("duplicate_judgement")
    assert (p.count, p.examples) == (1, ("q/a",))
    assert "1 with a different grade" in p.message


def test_qrels_comments_and_blank_lines_like_trec_eval(tmp_path, both_paths):
    f = _write(tmp_path / "q.trec", "# judged by x\n\nq 0 a 1\n  # another\nq 0 b 0\n")
    assert read_qrels(f).df["doc_id"].tolist() == ["a", "b"]


def test_empty_qrels_is_fatal(tmp_path):
    with pytest.raises(DataError, match=r"q\.tsv: the qrels file is empty"):
        read_qrels(_write(tmp_path / "q.tsv", "\n \n"))


# ---------------------------------------------------------------------------------------------- runs


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


def test_trec_ties_by_doc_id_descending(tmp_path, both_paths):
    # scores 0.5, 0.5, 0.7 for d1, d2, d3 -> d3 (0.7) first; the 0.5 tie goes to the larger id: d2, then d1
    f = _write(tmp_path / "r.trec", "q Q0 d1 1 0.5 t\nq Q0 d2 2 0.5 t\nq Q0 d3 3 0.7 t\n")
    report = ValidationReport()
    run = read_run(f, report=report)
    assert run.ranked_lists() == {"q": ["d3", "d2", "d1"]}
    assert run.df["rank"].tolist() == [1, 2, 3]
    # the file's rank column said d1, d2, d3: ignored for ordering, counted once per query as info
    (p,) = report.by_code("rank_column_ignored")
    assert (p.severity, p.count) == ("info", 1)
    assert p.examples[0] == "q/d3: rank 3 in the file, 1 by score"


def test_trec_tie_break_is_byte_order_not_numeric(tmp_path, both_paths):
    # strcmp order: "10" < "9" < "a" < "é"; descending: é, a, 9, 10
    f = _write(tmp_path / "r.trec", "q Q0 9 1 1 t\nq Q0 10 1 1 t\nq Q0 é 1 1 t\nq Q0 a 1 1 t\n")
    assert read_run(f).ranked_lists() == {"q": ["é", "a", "9", "10"]}


def test_trec_scores_compare_as_float32_like_trec_eval(tmp_path, both_paths):
    # 1.0 and 1.0 + 1e-9 are the same C float (trec_eval's TEXT_RESULTS.sim): a tie, so "b" > "a" goes first;
    # 1.0 + 1e-6 is a different float32 and wins on score.
    f = _write(
        tmp_path / "r.trec", "q Q0 a 1 1.000000001 t\nq Q0 b 2 1.0 t\nq2 Q0 a 1 1.000001 t\nq2 Q0 b 2 1.0 t\n"
    )
    run = read_run(f)
    assert run.ranked_lists() == {"q": ["b", "a"], "q2": ["a", "b"]}
    assert run.df["score"].iloc[1] == 1.000000001  # the score column keeps the float64 value


def test_trec_whitespace_variants_and_extra_fields(tmp_path, both_paths):
    # tabs, runs of spaces, CRLF, leading blanks, comments, blank lines and fields after the tag (trec_eval
    # ignores them) all read the same
    text = "# comment\r\n  q\tQ0   d1 1\t 0.5 t\r\n\nq Q0 d2 2 0.7 t junk at the end\r\n"
    report = ValidationReport()
    run = read_run(_write(tmp_path / "r.trec", text), report=report)
    assert run.ranked_lists() == {"q": ["d2", "d1"]}
    (p,) = report.by_code("extra_fields_ignored")
    assert (p.severity, p.examples) == ("info", ("line 4",))


def test_run_duplicates_keep_best_ranked_and_are_counted(tmp_path, both_paths):
    # d1 appears with 0.9 and 0.3: the 0.9 occurrence (rank 1) is kept; d2 twice with the same score
    f = _write(
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
    f = _write(tmp_path / "r.jsonl", json.dumps({"query_id": "q", "doc_ids": ["a", "b", "a", "c"]}) + "\n")
    report = ValidationReport()
    run = read_run(f, report=report)
    assert run.ranked_lists() == {"q": ["a", "b", "c"]}
    assert run.df["rank"].tolist() == [1, 2, 3]
    assert report.by_code("duplicate_doc_in_run")[0].examples == ("q/a",)


def test_jsonl_keeps_list_order_even_against_scores(tmp_path):
    line = {"query_id": "q", "results": [{"doc_id": "a", "score": 0.1}, {"doc_id": "b", "score": 0.9}]}
    run = read_run(_write(tmp_path / "r.jsonl", json.dumps(line) + "\n"))
    assert run.ranked_lists() == {"q": ["a", "b"]}


def test_csv_with_rank_keeps_rank_order(tmp_path):
    f = _write(tmp_path / "r.csv", "query_id,doc_id,score,rank\nq,a,0.1,2\nq,b,0.9,1\nq,c,0.9,3\n")
    assert read_run(f).ranked_lists() == {"q": ["b", "a", "c"]}


def test_empty_run_is_a_warning(tmp_path):
    report = ValidationReport()
    run = read_run(_write(tmp_path / "r.trec", ""), report=report)
    assert len(run) == 0 and list(run.df.columns) == ["query_id", "doc_id", "score", "rank"]
    assert _codes(report) == {"empty_file": 1}


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-Infinity"])
def test_non_finite_score_is_fatal_with_line(tmp_path, bad, both_paths):
    f = _write(tmp_path / "r.trec", f"q Q0 a 1 1 t\n\nq Q0 b 2 {bad} t\n")
    with pytest.raises(DataError, match=rf"r\.trec:3: the score is {bad}, which cannot be ordered"):
        read_run(f)


def test_fatal_message_is_one_paragraph_in_the_house_format(tmp_path):
    f = _write(tmp_path / "bm25.trec", "q1 Q0 d1 1 0.9 t\n" * 16 + "q1 Q0 d3 4 0.7\n")
    with pytest.raises(DataError) as err:
        read_run(f)
    assert str(err.value) == (
        f'{f}:17: expected 6 whitespace-separated fields "qid Q0 docid rank score tag", found 5 ("q1 Q0 d3 4 '
        '0.7"). Expected TREC run lines "qid Q0 docid rank score tag" (6 whitespace-separated fields). Fix: add '
        "the run tag column, or pass a JSONL/CSV run instead."
    )


def test_non_utf8_bytes_are_replaced_and_counted(tmp_path, both_paths):
    f = _write(tmp_path / "r.trec", b"q Q0 a 1 1 t\nq Q0 caf\xe9 2 0.5 t\n")
    report = ValidationReport()
    run = read_run(f, report=report)
    assert run.df["doc_id"].tolist() == ["a", "caf\ufffd"]
    (p,) = report.by_code("non_utf8")
    assert (p.count, p.examples) == (1, ("line 2",))


def test_unknown_format_names_file_line_and_formats(tmp_path):
    with pytest.raises(DataError) as err:
        read_run(_write(tmp_path / "r.dat", "\nhello\n"))
    message = str(err.value)
    assert message.startswith(f'{tmp_path / "r.dat"}:2: matches no run format (line 2 is "hello")')
    assert "TREC run" in message and "JSONL" in message and "CSV" in message


def test_missing_file_is_fatal(tmp_path):
    with pytest.raises(DataError, match=r"nope\.trec: file not found"):
        read_run(tmp_path / "nope.trec")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q10"]),
            st.text(alphabet="ab9Zé-", min_size=1, max_size=3),
            st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.0 + 1e-9, -3.0, 1e39, 2.5e-46]),
        ),
        max_size=30,
    )
)
def test_trec_order_property(rows):
    """trec_order == Python's sort on (query first-seen, -float32(score), doc id descending)."""
    q = [r[0] for r in rows]
    d = [r[1] for r in rows]
    s = np.array([r[2] for r in rows], dtype=np.float64)
    perm = trec_order(q, d, s) if rows else np.array([], dtype=np.int64)
    first_seen = {x: i for i, x in reversed(list(enumerate(q)))}
    with np.errstate(over="ignore"):
        s32 = s.astype(np.float32)
    expected = sorted(range(len(rows)), key=lambda i: (first_seen[q[i]], -float(s32[i]), _desc(d[i])))
    got = [(q[i], float(s32[i]), d[i]) for i in perm]
    assert got == [(q[i], float(s32[i]), d[i]) for i in expected]


def _desc(text: str) -> tuple:
    # a key that sorts strings descending: negated code points, and a longer string before its prefix
    return (*(-ord(c) for c in text), 1)


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
    existing = _write(tmp_path / "k=v.trec", "")
    assert parse_run_arg(str(existing)) == ("k=v", str(existing))
    with pytest.raises(DataError, match="run name before '=' is empty"):
        parse_run_arg("=runs/x.trec")


# ---------------------------------------------------------------------------------------------- load_dataset


@pytest.fixture
def beir(tmp_path) -> Path:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    shutil.copy(FIX / "corpus.jsonl", root / "corpus.jsonl")
    shutil.copy(FIX / "queries.jsonl", root / "queries.jsonl")
    shutil.copy(FIX / "qrels.tsv", root / "qrels" / "test.tsv")
    _write(root / "qrels" / "dev.tsv", "query-id\tcorpus-id\tscore\nq1\td3\t1\n")
    return root


def test_load_dataset_from_beir_folder(beir):
    ds = load_dataset(data_dir=beir, runs=[f"bm25={FIX / 'run.trec'}", FIX / "run.jsonl"])
    assert ds.name == "beir"
    assert len(ds.corpus) == 4 and len(ds.queries) == 3 and len(ds.qrels) == 5
    assert list(ds.runs) == ["bm25", "run"]
    assert ds.runs["bm25"].ranked_lists() == ds.runs["run"].ranked_lists() == RUN_ORDER
    dev = load_dataset(data_dir=beir, split="dev")
    assert dev.qrels.df.to_dict("records") == [{"query_id": "q1", "doc_id": "d3", "relevance": 1}]


def test_load_dataset_explicit_paths_override_the_folder(beir, tmp_path):
    other = _write(tmp_path / "other.tsv", "query-id\tcorpus-id\tscore\nq2\td1\t1\n")
    ds = load_dataset(data_dir=beir, qrels=other, queries=FIX / "queries.tsv")
    assert ds.qrels.source == str(other)
    assert ds.queries.source == str(FIX / "queries.tsv") and "area" not in ds.queries.df
    assert ds.corpus.source == str(beir / "corpus.jsonl")


def test_load_dataset_missing_split_lists_the_splits(beir):
    with pytest.raises(DataError, match=r"test\.tsv|train\.tsv") as err:
        load_dataset(data_dir=beir, split="train")
    assert "available splits: dev, test" in str(err.value)


def test_load_dataset_needs_qrels():
    with pytest.raises(DataError, match="No judgements given"):
        load_dataset(corpus=FIX / "corpus.jsonl")


def test_duplicate_run_names_are_fatal():
    with pytest.raises(DataError, match=r"the run name 'run' is already used by .*run\.trec"):
        load_dataset(qrels=FIX / "qrels.tsv", runs=[FIX / "run.trec", FIX / "run.jsonl"])
    # (name, path) pairs with name None take the stem, like parse_run_arg
    ds = load_dataset(qrels=FIX / "qrels.tsv", runs=[(None, FIX / "run.trec"), ("b", FIX / "run.jsonl")])
    assert list(ds.runs) == ["run", "b"]


def test_load_dataset_cross_checks(tmp_path):
    """Every cross-file count, on a hand-made set.

    corpus: a b c;  queries: q1 "x", q2 "" (no text), q4 "y" (judged, nothing relevant)
    qrels: q1 a 1, q1 zz 1 (not in corpus), q2 b 1, q3 c 2 (q3 has no query text), q4 a 0
    golden queries (grade > 0): q1 q2 q3;  run: q1 -> a, yy (not in corpus); q9 -> b (not judged)
    """
    corpus = _write(tmp_path / "c.jsonl", "".join(json.dumps({"_id": d, "text": d}) + "\n" for d in "abc"))
    queries = _write(tmp_path / "q.tsv", "q1\tx\nq2\t\nq4\ty\n")
    qrels = _write(tmp_path / "qrels.trec", "q1 0 a 1\nq1 0 zz 1\nq2 0 b 1\nq3 0 c 2\nq4 0 a 0\n")
    run = _write(tmp_path / "r.trec", "q1 Q0 a 1 2 t\nq1 Q0 yy 2 1 t\nq9 Q0 b 1 1 t\n")
    ds = load_dataset(corpus=corpus, queries=queries, qrels=qrels, runs=[run])
    rep = ds.report
    expect = {
        "query_without_text": (1, ("q2",), queries),
        "query_without_relevant": (1, ("q4",), qrels),
        "qrels_doc_not_in_corpus": (1, ("q1/zz",), qrels),
        "run_doc_not_in_corpus": (1, ("q1/yy",), run),
        "query_missing_from_run": (2, ("q2", "q3"), run),  # they score 0, like trec_eval -c
        "run_query_not_judged": (1, ("q9",), run),
        "golden_query_without_text": (2, ("q2", "q3"), queries),
    }
    assert _codes(rep) == {code: n for code, (n, _, _) in expect.items()}
    for code, (n, examples, file) in expect.items():
        (p,) = rep.by_code(code)
        assert (p.count, p.examples, p.file) == (n, examples, str(file)), code
    assert rep.by_code("query_without_relevant")[0].severity == "info"


def test_corpus_and_queries_record_counts(tmp_path, both_paths):
    """Duplicate ids, empty documents, missing ids, unreadable lines, queries without text."""
    corpus = _write(
        tmp_path / "c.jsonl",
        '{"_id": "a", "text": "x"}\n'
        '{"_id": "b", "title": " ", "text": ""}\n'  # empty document (kept)
        '{"_id": "a", "text": "again"}\n'  # duplicate id: first kept
        "{broken\n"  # line 4: not JSON (skipped)
        '{"title": "t", "text": "no id"}\n',  # line 5: no id (skipped)
    )
    report = ValidationReport()
    df = read_corpus(corpus, report=report).df
    assert df[["doc_id", "text"]].values.tolist() == [["a", "x"], ["b", ""]]
    assert _codes(report) == {
        "malformed_line": 1,
        "missing_id": 1,
        "duplicate_doc_id": 1,
        "empty_document": 1,
    }
    assert report.by_code("malformed_line")[0].examples[0].startswith("line 4")
    assert report.by_code("missing_id")[0].examples == ("line 5",)
    assert report.by_code("duplicate_doc_id")[0].examples == ("a",)
    assert report.by_code("empty_document")[0].examples == ("b",)

    queries = _write(
        tmp_path / "q.jsonl", '{"_id": "q1", "text": "x"}\n{"_id": "q1", "text": "y"}\n{"_id": "q2"}\n'
    )
    report = ValidationReport()
    df = read_queries(queries, report=report).df
    assert df.values.tolist() == [["q1", "x"], ["q2", ""]]
    assert _codes(report) == {"duplicate_query_id": 1, "query_without_text": 1}


def test_missing_id_in_pyarrow_path_names_the_line(tmp_path, both_paths):
    f = _write(tmp_path / "c.jsonl", '{"_id": "a", "text": "x"}\n\n{"text": "y"}\n')
    report = ValidationReport()
    read_corpus(f, report=report)
    assert report.by_code("missing_id")[0].examples == ("line 3",)


# ---------------------------------------------------------------------------------------------- references


def _ranks_from_pytrec_eval(run: dict[str, dict[str, float]]) -> dict[tuple[str, str], int]:
    """Where pytrec_eval (trec_eval) ranks each doc: one synthetic query per (q, d) with only d relevant;
    recip_rank = 1 / rank."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, runs = {}, {}
    for q, docs in run.items():
        for d in docs:
            qrels[f"{q}|{d}"] = {d: 1}
            runs[f"{q}|{d}"] = docs
    res = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(runs)
    return {tuple(k.split("|")): round(1 / v["recip_rank"]) for k, v in res.items()}


def test_order_matches_pytrec_eval_on_tie_heavy_runs(tmp_path, both_paths):
    rng = random.Random(7)
    # exact ties, float32 ties (0.2 + 1e-9; 20.123401 / 20.123402), a float32 gap (0.2 + 1e-7), -0.0 == 0.0
    values = [0.1, 0.2, 0.2 + 1e-9, 0.2 + 1e-7, 0.5, -0.0, 0.0, 3.0, 20.123401, 20.123402]
    lines, run = [], {}
    for q in ("1", "2", "10"):
        for i, d in enumerate(rng.sample([f"D{j}" for j in range(40)] + ["d", "D", "ä", "10", "9"], 25)):
            s = rng.choice(values)
            lines.append(f"{q} Q0 {d} {i + 1} {s!r} t\n")
            run.setdefault(q, {})[d] = s
    ours = read_run(_write(tmp_path / "r.trec", "".join(lines)))
    want = _ranks_from_pytrec_eval(run)
    got = {(q, d): r for q, d, r in ours.df[["query_id", "doc_id", "rank"]].itertuples(index=False)}
    assert got == want


def _trec_out(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split()
        out.setdefault(qid, {})[measure] = value
    return out


@pytest.mark.skipif(not TREC_TESTS.is_dir(), reason="../shared/data/trec_eval_tests not available")
@pytest.mark.parametrize(
    ("results", "expected"), [("results.test", "out.test.aq"), ("results.trunc", "out.test.aqc")]
)
def test_order_matches_trec_eval_outputs(results, expected):
    """P@k and reciprocal rank per query from our order equal trec_eval's own printed values (4 decimals)."""
    run = read_run(TREC_TESTS / results)
    qrels = read_qrels(TREC_TESTS / "qrels.test")
    relevant = set(map(tuple, qrels.relevant()[["query_id", "doc_id"]].to_numpy().tolist()))
    ref = _trec_out(TREC_TESTS / expected)
    for q, docs in run.ranked_lists().items():
        hits = [(q, d) in relevant for d in docs]
        assert f"{next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0):.4f}" == ref[q]["recip_rank"]
        for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000):
            assert f"{sum(hits[:k]) / k:.4f}" == ref[q][f"P_{k}"], (q, k)


def test_empty_corpus_and_queries_are_warnings(tmp_path):
    report = ValidationReport()
    corpus = read_corpus(_write(tmp_path / "c.jsonl", "\n"), report=report)
    queries = read_queries(_write(tmp_path / "q.tsv", ""), report=report)
    empty_folder = tmp_path / "docs"
    empty_folder.mkdir()
    folder = read_corpus(empty_folder, report=report)
    assert (len(corpus), len(queries), len(folder)) == (0, 0, 0)
    assert list(corpus.df.columns) == ["doc_id", "title", "text"]
    assert [(p.code, p.severity) for p in report] == [("empty_file", "warning")] * 3


def test_qrels_without_header_is_read_with_info(tmp_path, both_paths):
    report = ValidationReport()
    df = read_qrels(_write(tmp_path / "q.tsv", "q1\td1\t1\nq1\td2\t0\n"), report=report).df
    assert _records(df, ["query_id", "doc_id", "relevance"]) == [("q1", "d1", 1), ("q1", "d2", 0)]
    assert [(p.code, p.severity) for p in report] == [("qrels_without_header", "info")]


def test_csv_line_numbers_follow_quoted_newlines_and_skipped_rows(tmp_path):
    # line 1 header; d1 spans lines 2-3; line 4 is short (skipped); line 6 has no id
    f = _write(tmp_path / "c.csv", '_id,title,text\nd1,A,"multi\nline"\nd2,B\nd3,C,ok\n,D,no id\n')
    report = ValidationReport()
    df = read_corpus(f, report=report).df
    assert df[["doc_id", "text"]].values.tolist() == [["d1", "multi\nline"], ["d3", "ok"]]
    assert report.by_code("malformed_line")[0].examples == ('line 4: "d2,B"',)
    assert report.by_code("missing_id")[0].examples == ("line 6",)


def test_csv_run_with_rank_only_gets_scores_minus_rank(tmp_path):
    run = read_run(_write(tmp_path / "r.csv", "qid,docid,rank\nq,b,2\nq,a,1\n"))
    assert run.ranked_lists() == {"q": ["a", "b"]}
    assert run.df["score"].tolist() == [-1.0, -2.0]


def test_csv_run_non_integer_rank_is_fatal(tmp_path):
    with pytest.raises(DataError, match=r"r\.csv:3: the rank is not an integer"):
        read_run(_write(tmp_path / "r.csv", "query_id,doc_id,score,rank\nq,a,1,1\nq,b,0.5,1.5\n"))


# ---------------------------------------------------------------------------------------------- hardening (issue 10)


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
    f = _write(tmp_path / name, text)
    with pytest.raises(DataError, match=rf"{name.replace('.', '[.]')}:{line}: .*out of range") as err:
        read_qrels(f)
    assert "64-bit" in str(err.value) and "Fix:" in str(err.value)


def test_qrels_grade_at_the_int64_limits_is_kept(tmp_path, both_paths):
    f = _write(tmp_path / "q.trec", "q 0 a 9223372036854775807\nq 0 b -9223372036854775808\n")
    assert read_qrels(f).df["relevance"].tolist() == [2**63 - 1, -(2**63)]


@pytest.mark.parametrize(
    "digits", [400, 5000]
)  # 400: overflows a float; 5000: past Python's int-parsing limit
def test_jsonl_score_too_large_for_a_float_is_fatal(tmp_path, digits):
    huge = "1" + "0" * (digits - 1)
    f = _write(
        tmp_path / "r.jsonl",
        '{"query_id": "q", "results": [{"doc_id": "a", "score": 1}]}\n'
        f'{{"query_id": "p", "results": [{{"doc_id": "b", "score": {huge}}}]}}\n',
    )
    with pytest.raises(DataError, match=r"r\.jsonl:2: ") as err:
        read_run(f)
    assert "Fix:" in str(err.value) and len(str(err.value)) < 1000


def test_jsonl_huge_integer_id_is_fatal_not_a_crash(tmp_path):
    f = _write(tmp_path / "r.jsonl", '{"query_id": ' + "9" * 5000 + ', "doc_ids": ["a"]}\n')
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
    ids = _write(tmp_path / "ids.txt", "a\nb\n")
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


def test_parse_run_arg_survives_paths_the_os_refuses():
    long = "n=" + "x" * 300 + ".trec"
    assert parse_run_arg(long) == ("n", "x" * 300 + ".trec")
    assert parse_run_arg("n=a\0b.trec") == ("n", "a\0b.trec")


# Python's float()/int() read any Unicode digit ('９９' -> 99) and underscores ('1_0' -> 10); trec_eval's atof/atol
# read '９９' as 0 and '1_0' as 1. Refused rather than guessed.
@pytest.mark.parametrize("score", ["９９", "٣", "1_0", "²"])
def test_trec_run_non_ascii_or_underscore_score_is_fatal(tmp_path, score, both_paths):
    f = _write(tmp_path / "r.trec", f"q Q0 a 1 1 t\nq Q0 b 2 {score} t\n")
    with pytest.raises(
        DataError, match=rf"r\.trec:2: the score \(5th field\) is not a number: '{score}'"
    ) as err:
        read_run(f)
    assert ("non-ASCII" in str(err.value)) == (not score.isascii())


def test_csv_run_non_ascii_score_names_its_line(tmp_path, both_paths):
    f = _write(tmp_path / "r.csv", "query_id,doc_id,score\nq,a,1\nq,b,2\nq,c,９\n")
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
        read_qrels(_write(tmp_path / name, text))
    assert ("non-ASCII" in str(err.value)) == (not grade.isascii())


@pytest.mark.parametrize("kind", ["list", "struct", "binary-not-utf8"])
@pytest.mark.parametrize("column", ["_id", "title", "text"])
def test_parquet_non_text_columns_are_refused_with_their_name(tmp_path, kind, column):
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = {
        "list": pa.array([["x", "y"], ["z"]]),
        "struct": pa.array([{"en": "x"}, {"en": "y"}]),
        "binary-not-utf8": pa.array([b"ok", b"\xff\xfe"], type=pa.binary()),
    }[kind]
    cols = {"_id": pa.array(["d1", "d2"]), "title": pa.array(["t", "u"]), "text": pa.array(["a", "b"])}
    cols[column] = values
    f = tmp_path / "c.parquet"
    pq.write_table(pa.table(cols), f)
    with pytest.raises(DataError, match=rf"c\.parquet: the {column!r} column .*row [12].*Fix:"):
        read_corpus(f)


def test_parquet_binary_utf8_text_is_decoded(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "q.parquet"
    pq.write_table(
        pa.table(
            {"_id": pa.array([b"q1"], pa.binary()), "text": pa.array(["caf\u00e9".encode()], pa.binary())}
        ),
        f,
    )
    assert read_queries(f).df.to_dict("records") == [{"query_id": "q1", "text": "caf\u00e9"}]


def test_jsonl_list_text_is_refused(tmp_path, both_paths):
    f = _write(tmp_path / "c.jsonl", '{"_id": "d1", "text": "fine"}\n{"_id": "d2", "text": ["a", "b"]}\n')
    with pytest.raises(DataError, match=r"c\.jsonl: the 'text' column .*line 2"):
        read_corpus(f)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("r.trec", b"q1 Q0 a 1 1 t\nq\xff2 Q0 a 1 1 t\nq\xfe2 Q0 b 1 1 t\n"),  # query ids
        ("r.trec", b"q1 Q0 x 3 0.1 t\nq1 Q0 d\xff 1 1 t\nq1 Q0 d\xfe 2 0.5 t\n"),  # doc ids of one query
        (
            "r.jsonl",
            b'{"query_id": "q1", "doc_ids": ["a"]}\n{"query_id": "q\xff2", "doc_ids": ["a"]}\n'
            b'{"query_id": "q\xfe2", "doc_ids": ["b"]}\n',
        ),
        ("r.csv", b"query_id,doc_id,score\nq1,a,1\nq\xff2,a,1\nq\xfe2,b,1\n"),
        # a real U+FFFD in valid UTF-8 and a bad byte that decodes to it
        ("r.trec", "q1 Q0 a 1 1 t\nq\ufffd2 Q0 a 1 1 t\n".encode() + b"q\xfe2 Q0 b 1 1 t\n"),
    ],
)
def test_ids_that_collide_only_after_decoding_are_fatal(tmp_path, name, text, both_paths):
    with pytest.raises(DataError, match=rf"{name.replace('.', '[.]')}: .*UTF-8.*lines [23] and [34].*Fix:"):
        read_run(_write(tmp_path / name, text))


@pytest.mark.parametrize(
    ("reader", "name", "text"),
    [
        (read_qrels, "q.trec", b"q1 0 a 1\nq\xff2 0 a 1\nq\xfe2 0 b 1\n"),
        (
            read_qrels,
            "q.jsonl",
            b'{"query_id": "q1", "relevant": ["a"]}\n{"query_id": "q\xff2", "relevant": ["a"]}\n'
            b'{"query_id": "q\xfe2", "relevant": ["b"]}\n',
        ),
        (read_queries, "q.tsv", b"q1\tx\nq\xff2\ty\nq\xfe2\tz\n"),
        (
            read_queries,
            "q.jsonl",
            b'{"_id": "q1", "text": "x"}\n{"_id": "q\xff2", "text": "y"}\n{"_id": "q\xfe2", "text": "z"}\n',
        ),
        (read_corpus, "c.csv", b"_id,text\nd1,x\nd\xff2,y\nd\xfe2,z\n"),
    ],
)
def test_other_readers_refuse_ids_that_collide_after_decoding(tmp_path, reader, name, text, both_paths):
    lines = "lines 3 and 4" if name.endswith(".csv") else "lines 2 and 3"  # the CSV header is line 1
    with pytest.raises(DataError, match=rf"{name.replace('.', '[.]')}: .*UTF-8.*{lines}"):
        reader(_write(tmp_path / name, text))


def test_non_utf8_ids_that_stay_distinct_are_only_warned(tmp_path, both_paths):
    # q\xff2 and q\xfe3 decode to q\ufffd2 and q\ufffd3: distinct, so the old counted warning only
    report = ValidationReport()
    run = read_run(_write(tmp_path / "r.trec", b"q\xff2 Q0 a 1 1 t\nq\xfe3 Q0 b 1 1 t\n"), report=report)
    assert run.query_ids() == ["q\ufffd2", "q\ufffd3"]
    assert _codes(report) == {"non_utf8": 2}  # two lines with bytes that are not UTF-8


def test_load_dataset_refuses_an_empty_run(tmp_path):
    run = _write(tmp_path / "r.trec", "\n")
    with pytest.raises(DataError, match=r"r\.trec: run 'r' has no results.*Fix:"):
        load_dataset(qrels=FIX / "qrels.tsv", runs=[run])


@pytest.mark.parametrize(
    ("run_ids", "hint"),
    [
        (["Q1", "Q2"], "they match when case is ignored (run ids look like 'Q1', the qrels use 'q1')"),
        (
            ["q01", "q002"],
            "they match when leading zeros are ignored (run ids look like 'q01', the qrels use 'q1')",
        ),
        (
            ["1", "2"],
            "they match when only their numbers are compared (run ids look like '1', the qrels use 'q1')",
        ),
        (["zz", "yy"], ""),
    ],
)
def test_load_dataset_refuses_a_run_without_golden_queries(tmp_path, run_ids, hint):
    text = "".join(f"{q} Q0 d1 1 1 t\n" for q in run_ids)
    run = _write(tmp_path / "r.trec", text)
    with pytest.raises(DataError) as err:
        load_dataset(qrels=FIX / "qrels.tsv", runs=[("r", run)])
    message = str(err.value)
    assert message.startswith(f"{run}: none of the 2 query ids of run 'r' is a golden query of the qrels")
    assert f"'{run_ids[0]}'" in message and "'q1'" in message  # a few ids from each side
    assert hint in message and "ids are compared exactly" in message and "Fix:" in message


def test_load_dataset_keeps_a_partial_run_as_a_warning(tmp_path):
    run = _write(tmp_path / "r.trec", "q1 Q0 d1 1 1 t\nQ2 Q0 d3 1 1 t\n")  # q1 matches, Q2 does not
    ds = load_dataset(qrels=FIX / "qrels.tsv", runs=[run])
    assert set(_codes(ds.report)) >= {"query_missing_from_run", "run_query_not_judged"}


def test_load_dataset_without_runs_is_fine():  # `diagnose evaluate --baseline bm25` has no --run
    assert load_dataset(qrels=FIX / "qrels.tsv").runs == {}


def test_messages_agree_in_number(tmp_path):
    corpus = _write(tmp_path / "c.jsonl", '{"_id": "a", "text": "x"}\n{"_id": "b", "text": ""}\n')
    queries = _write(tmp_path / "q.tsv", "q1\tx\nq2\t\n")
    qrels = _write(tmp_path / "qrels.trec", "q1 0 a 1\nq1 0 a 1\nq2 0 zz 1\nq3 0 a 0\n")
    run = _write(tmp_path / "r.trec", "q1 Q0 a 1 2 t\nq9 Q0 b 1 1 t\n")
    ds = load_dataset(corpus=corpus, queries=queries, qrels=qrels, runs=[run])
    text = ds.report.format()
    for wrong in (
        " are ignored",
        "1 judgements",
        "1 queries",
        "they score",
        "they are",
        "repeat a",
        "those can",
    ):
        assert wrong not in text, text
    assert "(1x)" not in text
    assert "1 query has no judgements in the qrels and is ignored" in text
    assert "1 golden query has no results; it scores 0" in text


def test_problem_format_shows_the_count_only_above_one():
    from diagnose.data import Problem

    assert Problem("c", "warning", "one thing", "f.txt").format() == "[warning] f.txt: one thing"
    assert Problem("c", "warning", "things", None, 3).format() == "[warning] things (3x)"


def test_long_ids_are_cut_in_messages_and_examples(tmp_path):
    long_q, long_d = "q" * 300, "d" * 150
    run = _write(tmp_path / "r.trec", f"q1 Q0 d1 1 1 t\n{long_q} Q0 {long_d} 1 1 t\nq1 Q0 {long_d} 2 0.5 t\n")
    corpus = _write(tmp_path / "c.jsonl", '{"_id": "d1", "text": "x"}\n')
    ds = load_dataset(corpus=corpus, qrels=FIX / "qrels.tsv", runs=[run])
    for p in ds.report.problems:
        for example in p.examples:
            assert len(example) < 200, example
    examples = {e for p in ds.report.problems for e in p.examples}
    assert "q" * 79 + "… (300 characters)" in examples
    jsonl = _write(
        tmp_path / "r.jsonl", f'{{"query_id": "{long_q}", "results": [{{"doc_id": "a", "score": "x"}}]}}\n'
    )
    with pytest.raises(DataError) as err:
        read_run(jsonl)
    assert long_q not in str(err.value)


def test_missing_values_are_not_shown_as_none(tmp_path):
    f = _write(tmp_path / "q.jsonl", '{"query_id": "q", "relevant": [null]}\n')
    with pytest.raises(DataError) as err:
        read_qrels(f)
    assert "None" not in str(err.value) and "null" in str(err.value)


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
        reader(_write(tmp_path / name, text))


def test_csv_line_numbers_survive_a_lone_cr_in_a_field(tmp_path, both_paths):
    report = ValidationReport()
    df = read_corpus(_write(tmp_path / "c.csv", b"_id,text\nd1,a\rb\nd2,c\nd3\n"), report=report).df
    assert "d2" in df["doc_id"].tolist()
    assert report.by_code("malformed_line")  # the short rows are counted with a line, not a crash


# found by tests/test_fuzz_readers.py: a header with a repeated name made df[name] a DataFrame (AttributeError)
def test_repeated_field_names_keep_the_first_and_are_counted(tmp_path, both_paths):
    report = ValidationReport()
    corpus = read_corpus(_write(tmp_path / "c.csv", "_id,text,text\nd1,first,second\n"), report=report)
    assert corpus.df["text"].tolist() == ["first"]
    (p,) = report.by_code("duplicate_field")
    assert p.examples == ("'text'",)
    with pytest.raises(DataError, match="no id field found"):  # the fuzzed case: a header of two empty names
        read_corpus(_write(tmp_path / "e.trec", ',\r\n{"_id": "d1"}\n'))


def test_csv_run_with_a_repeated_column_is_fatal(tmp_path):
    with pytest.raises(DataError, match=r"r\.csv:1: the header names 'score' more than once"):
        read_run(_write(tmp_path / "r.csv", "query_id,doc_id,score,score\nq,a,1,2\n"))


@pytest.mark.parametrize("fast", [True, False])
def test_wide_metadata_objects_stay_one_column(tmp_path, monkeypatch, fast):
    """SciFact's query metadata is an object keyed by cited document ids (hundreds of keys over the file): it stays
    one column of JSON text (no column per document, no pandas PerformanceWarning), the innermost wide object only,
    and a field inside it can still be sliced by."""
    import json
    import warnings

    from diagnose import io as dio
    from diagnose.compare import _field_values

    monkeypatch.setattr(dio, "_FAST", fast)
    path = tmp_path / "queries.jsonl"
    with open(path, "w") as f:
        for i in range(60):
            cites = {f"doc{j}": [{"label": "SUPPORT"}] for j in range(i % 3, 100, 3)}  # 100 keys over the file
            meta = {"area": "bio" if i % 2 else "med", "cites": cites}
            f.write(json.dumps({"_id": f"q{i}", "text": f"claim {i}", "metadata": meta}) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = dio.read_queries(path)
    assert list(q.df.columns) == ["query_id", "text", "area", "cites"]
    assert json.loads(q.df["cites"].iloc[1]) == {f"doc{j}": [{"label": "SUPPORT"}] for j in range(1, 100, 3)}
    assert _field_values(q, "area").tolist()[:2] == ["med", "bio"]
    # q0 cites doc0, doc3, ...; q1 does not cite doc0
    assert _field_values(q, "cites.doc0").isna().tolist()[:2] == [False, True]
