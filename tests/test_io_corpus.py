"""Corpus and queries readers: every format gives the same records, folders, metadata columns, parquet and the
record counts of the validation report.

The fixtures in tests/fixtures hold the same small data set in every format (see make_fixtures.py there).
"""

from __future__ import annotations

import gzip

import pandas as pd
import pytest
from io_testing import FIX, codes, records, write

from diagnose.data import DataError, ValidationReport
from diagnose.io import read_corpus, read_queries

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


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus.csv", "corpus.tsv", "corpus.parquet"])
def test_corpus_formats_read_identical_records(name, both_paths):
    report = ValidationReport()
    corpus = read_corpus(FIX / name, report=report)
    assert list(corpus.df.columns) == ["doc_id", "title", "text", "area"]
    assert corpus.df.to_dict("records") == CORPUS.to_dict("records")  # same rows, same order
    assert all(isinstance(x, str) for x in corpus.df["doc_id"])  # "007" stays "007"
    assert len(report) == 0


def test_corpus_metadata_is_flattened_into_columns(tmp_path):
    f = write(
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
    assert codes(report) == {"ignored_files": 1}  # notes.json
    assert report.by_code("ignored_files")[0].severity == "info"


def test_corpus_field_options_and_autodetect(tmp_path):
    f = write(tmp_path / "c.csv", "ID,Heading,Body,lang\n1,H,B,en\n")
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


def test_queries_formats(both_paths):
    jl = read_queries(FIX / "queries.jsonl").df
    tsv = read_queries(FIX / "queries.tsv").df
    assert records(jl, ["query_id", "text"]) == records(tsv, ["query_id", "text"])
    assert jl["area"].tolist() == ["a", "b", "a"]  # metadata.area -> area
    assert list(tsv.columns) == ["query_id", "text"]


def test_queries_tsv_header_and_tabs_in_text(tmp_path):
    f = write(tmp_path / "q.tsv", "query_id\ttext\nq1\ta\tb\n")  # text = everything after the first tab
    assert read_queries(f).df.to_dict("records") == [{"query_id": "q1", "text": "a\tb"}]


def test_corpus_and_queries_record_counts(tmp_path, both_paths):
    """Duplicate ids, empty documents, missing ids, unreadable lines, queries without text."""
    corpus = write(
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
    assert codes(report) == {
        "malformed_line": 1,
        "missing_id": 1,
        "duplicate_doc_id": 1,
        "empty_document": 1,
    }
    assert report.by_code("malformed_line")[0].examples[0].startswith("line 4")
    assert report.by_code("missing_id")[0].examples == ("line 5",)
    assert report.by_code("duplicate_doc_id")[0].examples == ("a",)
    assert report.by_code("empty_document")[0].examples == ("b",)

    queries = write(
        tmp_path / "q.jsonl", '{"_id": "q1", "text": "x"}\n{"_id": "q1", "text": "y"}\n{"_id": "q2"}\n'
    )
    report = ValidationReport()
    df = read_queries(queries, report=report).df
    assert df.values.tolist() == [["q1", "x"], ["q2", ""]]
    assert codes(report) == {"duplicate_query_id": 1, "query_without_text": 1}


def test_missing_id_in_pyarrow_path_names_the_line(tmp_path, both_paths):
    f = write(tmp_path / "c.jsonl", '{"_id": "a", "text": "x"}\n\n{"text": "y"}\n')
    report = ValidationReport()
    read_corpus(f, report=report)
    assert report.by_code("missing_id")[0].examples == ("line 3",)


def test_empty_corpus_and_queries_are_warnings(tmp_path):
    report = ValidationReport()
    corpus = read_corpus(write(tmp_path / "c.jsonl", "\n"), report=report)
    queries = read_queries(write(tmp_path / "q.tsv", ""), report=report)
    empty_folder = tmp_path / "docs"
    empty_folder.mkdir()
    folder = read_corpus(empty_folder, report=report)
    assert (len(corpus), len(queries), len(folder)) == (0, 0, 0)
    assert list(corpus.df.columns) == ["doc_id", "title", "text"]
    assert [(p.code, p.severity) for p in report] == [("empty_file", "warning")] * 3


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
    f = write(tmp_path / "c.jsonl", '{"_id": "d1", "text": "fine"}\n{"_id": "d2", "text": ["a", "b"]}\n')
    with pytest.raises(DataError, match=r"c\.jsonl: the 'text' column .*line 2"):
        read_corpus(f)


@pytest.mark.parametrize("fast", [True, False])
def test_wide_metadata_objects_stay_one_column(tmp_path, monkeypatch, fast):
    """SciFact's query metadata is an object keyed by cited document ids (hundreds of keys over the file): it stays
    one column of JSON text (no column per document, no pandas PerformanceWarning), the innermost wide object only,
    and a field inside it can still be sliced by."""
    import json
    import warnings

    from diagnose import io as dio
    from diagnose.whatif.compare import _field_values

    monkeypatch.setattr(dio, "_FAST", fast)
    path = tmp_path / "queries.jsonl"
    with open(path, "w") as f:
        for i in range(60):
            cites = {
                f"doc{j}": [{"label": "SUPPORT"}] for j in range(i % 3, 100, 3)
            }  # 100 keys over the file
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


def test_texts_at_gives_the_texts_of_the_rows_asked_in_their_order(tmp_path):
    """``Corpus.texts_at`` (a block or a few documents, without the whole list) equals ``texts()`` at those rows,
    for a list in any order (row by row) and for a slice, missing titles included."""
    path = write(
        tmp_path / "c.jsonl",
        '{"_id": "a", "title": "Alpha", "text": "one"}\n{"_id": "b", "text": "two"}\n'
        '{"_id": "c", "title": "Gamma", "text": ""}\n{"_id": "d", "title": "", "text": "four"}\n',
    )
    corpus = read_corpus(path)
    whole = corpus.texts()
    assert whole == ["Alpha one", "two", "Gamma", "four"]
    assert corpus.texts_at([3, 0, 2, 0]) == [whole[3], whole[0], whole[2], whole[0]]
    assert corpus.texts_at(slice(1, 3)) == whole[1:3]
    assert corpus.texts_at([]) == []
