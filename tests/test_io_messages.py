"""The readers' messages: one paragraph in the house format, file and line named, counts in agreement with their
nouns, long ids cut, undecodable bytes replaced and counted, ids that collide after decoding refused.
"""

from __future__ import annotations

import pytest
from io_testing import FIX, codes, write

from diagnose.data import DataError, ValidationReport
from diagnose.io import load_dataset, read_corpus, read_qrels, read_queries, read_run


def test_fatal_message_is_one_paragraph_in_the_house_format(tmp_path):
    f = write(tmp_path / "bm25.trec", "q1 Q0 d1 1 0.9 t\n" * 16 + "q1 Q0 d3 4 0.7\n")
    with pytest.raises(DataError) as err:
        read_run(f)
    assert str(err.value) == (
        f'{f}:17: expected 6 whitespace-separated fields "qid Q0 docid rank score tag", found 5 ("q1 Q0 d3 4 '
        '0.7"). Expected TREC run lines "qid Q0 docid rank score tag" (6 whitespace-separated fields). Fix: add '
        "the run tag column, or pass a JSONL/CSV run instead."
    )


def test_non_utf8_bytes_are_replaced_and_counted(tmp_path, both_paths):
    f = write(tmp_path / "r.trec", b"q Q0 a 1 1 t\nq Q0 caf\xe9 2 0.5 t\n")
    report = ValidationReport()
    run = read_run(f, report=report)
    assert run.df["doc_id"].tolist() == ["a", "caf\ufffd"]
    (p,) = report.by_code("non_utf8")
    assert (p.count, p.examples) == (1, ("line 2",))


def test_unknown_format_names_file_line_and_formats(tmp_path):
    with pytest.raises(DataError) as err:
        read_run(write(tmp_path / "r.dat", "\nhello\n"))
    message = str(err.value)
    assert message.startswith(f'{tmp_path / "r.dat"}:2: matches no run format (line 2 is "hello")')
    assert "TREC run" in message and "JSONL" in message and "CSV" in message


def test_missing_file_is_fatal(tmp_path):
    with pytest.raises(DataError, match=r"nope\.trec: file not found"):
        read_run(tmp_path / "nope.trec")


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
        read_run(write(tmp_path / name, text))


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
        reader(write(tmp_path / name, text))


def test_non_utf8_ids_that_stay_distinct_are_only_warned(tmp_path, both_paths):
    # q\xff2 and q\xfe3 decode to q\ufffd2 and q\ufffd3: distinct, so the old counted warning only
    report = ValidationReport()
    run = read_run(write(tmp_path / "r.trec", b"q\xff2 Q0 a 1 1 t\nq\xfe3 Q0 b 1 1 t\n"), report=report)
    assert run.query_ids() == ["q\ufffd2", "q\ufffd3"]
    assert codes(report) == {"non_utf8": 2}  # two lines with bytes that are not UTF-8


def test_messages_agree_in_number(tmp_path):
    corpus = write(tmp_path / "c.jsonl", '{"_id": "a", "text": "x"}\n{"_id": "b", "text": ""}\n')
    queries = write(tmp_path / "q.tsv", "q1\tx\nq2\t\n")
    qrels = write(tmp_path / "qrels.trec", "q1 0 a 1\nq1 0 a 1\nq2 0 zz 1\nq3 0 a 0\n")
    run = write(tmp_path / "r.trec", "q1 Q0 a 1 2 t\nq9 Q0 b 1 1 t\n")
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
    run = write(tmp_path / "r.trec", f"q1 Q0 d1 1 1 t\n{long_q} Q0 {long_d} 1 1 t\nq1 Q0 {long_d} 2 0.5 t\n")
    corpus = write(tmp_path / "c.jsonl", '{"_id": "d1", "text": "x"}\n')
    ds = load_dataset(corpus=corpus, qrels=FIX / "qrels.tsv", runs=[run])
    for p in ds.report.problems:
        for example in p.examples:
            assert len(example) < 200, example
    examples = {e for p in ds.report.problems for e in p.examples}
    assert "q" * 79 + "… (300 characters)" in examples
    jsonl = write(
        tmp_path / "r.jsonl", f'{{"query_id": "{long_q}", "results": [{{"doc_id": "a", "score": "x"}}]}}\n'
    )
    with pytest.raises(DataError) as err:
        read_run(jsonl)
    assert long_q not in str(err.value)


def test_missing_values_are_not_shown_as_none(tmp_path):
    f = write(tmp_path / "q.jsonl", '{"query_id": "q", "relevant": [null]}\n')
    with pytest.raises(DataError) as err:
        read_qrels(f)
    assert "None" not in str(err.value) and "null" in str(err.value)
