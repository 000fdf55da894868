"""load_dataset: a BEIR folder or explicit paths, the runs, and the cross-checks between corpus, queries, qrels
and runs.

The fixtures in tests/fixtures hold the same small data set in every format (see make_fixtures.py there).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from io_testing import FIX, RUN_ORDER, codes, write

from diagnose.data import DataError
from diagnose.io import load_dataset


@pytest.fixture
def beir(tmp_path) -> Path:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    shutil.copy(FIX / "corpus.jsonl", root / "corpus.jsonl")
    shutil.copy(FIX / "queries.jsonl", root / "queries.jsonl")
    shutil.copy(FIX / "qrels.tsv", root / "qrels" / "test.tsv")
    write(root / "qrels" / "dev.tsv", "query-id\tcorpus-id\tscore\nq1\td3\t1\n")
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
    other = write(tmp_path / "other.tsv", "query-id\tcorpus-id\tscore\nq2\td1\t1\n")
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
    corpus = write(tmp_path / "c.jsonl", "".join(json.dumps({"_id": d, "text": d}) + "\n" for d in "abc"))
    queries = write(tmp_path / "q.tsv", "q1\tx\nq2\t\nq4\ty\n")
    qrels = write(tmp_path / "qrels.trec", "q1 0 a 1\nq1 0 zz 1\nq2 0 b 1\nq3 0 c 2\nq4 0 a 0\n")
    run = write(tmp_path / "r.trec", "q1 Q0 a 1 2 t\nq1 Q0 yy 2 1 t\nq9 Q0 b 1 1 t\n")
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
    assert codes(rep) == {code: n for code, (n, _, _) in expect.items()}
    for code, (n, examples, file) in expect.items():
        (p,) = rep.by_code(code)
        assert (p.count, p.examples, p.file) == (n, examples, str(file)), code
    assert rep.by_code("query_without_relevant")[0].severity == "info"


def test_load_dataset_refuses_an_empty_run(tmp_path):
    run = write(tmp_path / "r.trec", "\n")
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
    run = write(tmp_path / "r.trec", text)
    with pytest.raises(DataError) as err:
        load_dataset(qrels=FIX / "qrels.tsv", runs=[("r", run)])
    message = str(err.value)
    assert message.startswith(f"{run}: none of the 2 query ids of run 'r' is a golden query of the qrels")
    assert f"'{run_ids[0]}'" in message and "'q1'" in message  # a few ids from each side
    assert hint in message and "ids are compared exactly" in message and "Fix:" in message


def test_load_dataset_keeps_a_partial_run_as_a_warning(tmp_path):
    run = write(tmp_path / "r.trec", "q1 Q0 d1 1 1 t\nQ2 Q0 d3 1 1 t\n")  # q1 matches, Q2 does not
    ds = load_dataset(qrels=FIX / "qrels.tsv", runs=[run])
    assert set(codes(ds.report)) >= {"query_missing_from_run", "run_query_not_judged"}


def test_load_dataset_without_runs_is_fine():  # `diagnose evaluate --baseline bm25` has no --run
    assert load_dataset(qrels=FIX / "qrels.tsv").runs == {}


@pytest.mark.parametrize("cpus", [1, 2])
def test_runs_read_beside_the_golden_set_report_and_fail_as_if_read_after_it(tmp_path, monkeypatch, cpus):
    """The runs are read in a thread beside the golden set and the texts (when there are two CPUs): the report lists
    the golden set's entries, then each run's in order, and the golden set's error is raised before a run's, as
    when the files are read one after the other."""
    import diagnose.io.dataset as dataset_module

    monkeypatch.setattr(dataset_module, "available_cpus", lambda: cpus)
    qrels = write(tmp_path / "qrels.trec", "q1 0 d1 1\nq1 0 d1 1\nq2 0 d2 1\n")  # a repeated judgement
    a = write(
        tmp_path / "a.trec", "q1 Q0 d1 1 1.0 a junk\nq1 Q0 d9 2 0.5 a\nq2 Q0 d2 1 1.0 a\n"
    )  # a field after the tag
    b = write(tmp_path / "b.trec", "q1 Q0 d1 1 1.0 b\nq1 Q0 d1 2 0.5 b\nq2 Q0 d8 1 1 b\n")  # a duplicate
    runs = [f"a={a}", f"b={b}"]
    ds = load_dataset(qrels=qrels, runs=runs)
    files = [(p.code, Path(p.file).name) for p in ds.report if p.file]
    assert [f for _, f in files] == sorted(
        (f for _, f in files), key=["qrels.trec", "a.trec", "b.trec"].index
    )
    assert {f for _, f in files} == {"qrels.trec", "a.trec", "b.trec"}
    assert list(ds.runs) == ["a", "b"]

    write(tmp_path / "b.trec", "q1 Q0 d1\n")  # too few fields: fatal
    with pytest.raises(DataError, match="b.trec"):
        load_dataset(qrels=qrels, runs=runs)
    bad_qrels = write(tmp_path / "bad.qrels", "q1 0 d1 many\n")
    with pytest.raises(DataError, match="bad.qrels"):
        load_dataset(qrels=bad_qrels, runs=runs)


@pytest.mark.parametrize("cpus", [1, 2])
def test_a_run_read_beside_the_golden_set_stays_confined_to_the_data_folder(tmp_path, monkeypatch, cpus):
    """The runs' thread runs in a copy of the caller's context: reads confined to a folder (the app's) refuse a run
    outside it there too, naming the path."""
    import diagnose.io.dataset as dataset_module
    from diagnose.io.files import _READ_ROOTS, confine_reads

    monkeypatch.setattr(dataset_module, "available_cpus", lambda: cpus)
    inside = tmp_path / "inside"
    inside.mkdir()
    qrels = write(inside / "qrels.trec", "q1 0 d1 1\n")
    outside = write(tmp_path / "run.trec", "q1 Q0 d2 1 1.0 r\n")
    token = confine_reads(inside)
    try:
        with pytest.raises(DataError, match="outside the data folder"):
            load_dataset(qrels=qrels, runs=[f"r={outside}"])
    finally:
        _READ_ROOTS.reset(token)
