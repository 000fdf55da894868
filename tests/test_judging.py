"""Judging the golden set where it is broken: the queue, the journal, merging, exports, the recomputed metrics, and
the CLI (``judge-queue``, ``--extra-qrels``).

Real components throughout: the library's BM25, the deterministic :class:`diagnose.embed.KeywordEncoder` (cosine =
cosine of hashed term counts), real files in ``tmp_path``. Journals are written under ``tmp_path`` only.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diagnose import judging
from diagnose.analysis import Analysis
from diagnose.cli import main
from diagnose.data import DataError, ValidationReport
from diagnose.embed import KeywordEncoder
from diagnose.io import load_dataset, read_qrels

ROOT = Path(__file__).resolve().parents[1]

# d2 repeats d1 word for word (keyword cosine 1.0: a near-duplicate), d4 shares one word ("solar") with q1.
DOCS = {
    "d1": "solar panel installation guide for homes",
    "d2": "Solar panel installation guide for homes!",
    "d3": "wind turbine maintenance schedule",
    "d4": "solar energy tax credit",
    "d5": "cooking pasta at home",
    "d6": "garden tools for the weekend",
}
QUERIES = {"q1": "solar panel installation", "q2": "wind turbine maintenance", "q3": "pasta cooking"}
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td5\t0\nq2\td3\t1\n"
# run A misses d3 for q2 (a failure at k=3); q3 has no judgement at all
RUN = (
    "q1 Q0 d1 1 4.0 A\nq1 Q0 d2 2 3.0 A\nq1 Q0 d4 3 2.0 A\nq1 Q0 d5 4 1.0 A\n"
    "q2 Q0 d6 1 2.0 A\nq2 Q0 d5 2 1.0 A\nq3 Q0 d5 1 2.0 A\nq3 Q0 d6 2 1.0 A\n"
)


def _write_data(folder: Path, *, qrels: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in DOCS.items())
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items())
    )
    if qrels:
        (folder / "qrels").mkdir(exist_ok=True)
        (folder / "qrels" / "test.tsv").write_text(QRELS)
    (folder / "A.trec").write_text(RUN)
    return folder


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(judging.JOURNAL_ENV, raising=False)
    return _write_data(tmp_path / "data")


def _analysis(folder: Path, **kw) -> Analysis:
    ds = load_dataset(data_dir=folder, runs=[("A", folder / "A.trec")])
    return Analysis(ds, encoder=KeywordEncoder(), cache_dir=folder.parent / "cache", **kw)


def _cos(a: str, b: str) -> float:
    v = KeywordEncoder().encode([a, b])
    return float(v[0] @ v[1])


# ------------------------------------------------------------------------------------------------ the queue


def test_queue_puts_the_near_duplicate_first_and_explains_every_pair(data):
    a = _analysis(data)
    queue = judging.judge_queue(a, k=3)
    pairs = list(zip(queue["query_id"], queue["doc_id"], strict=True))
    # judged pairs (q1 d1 grade 2, q1 d5 grade 0, q2 d3) never enter the queue; q3 (no judgement) does
    assert not {("q1", "d1"), ("q1", "d5"), ("q2", "d3")} & set(pairs)
    assert {q for q, _ in pairs} == {"q1", "q2", "q3"}
    assert queue["priority"].tolist() == list(range(1, len(queue) + 1))
    assert queue.attrs["pooled_runs"] == ["A", "bm25", "dense", "hybrid"]

    first = queue.iloc[0]
    assert (first["query_id"], first["doc_id"]) == ("q1", "d2") and first["near_duplicate"]
    # d1 and d2 tie in BM25 and in cosine; ties go to the larger doc id (trec_eval's order): d2 is #1 in both.
    # A, bm25, dense and hybrid all have d2 in their top 3: runs = 4 of the 4 covering q1.
    # score = mean(4/4, 1/log2(2), 1/log2(2), cos 1.0) = 1.0
    assert first["runs"] == 4 and first["bm25_rank"] == 1 and first["dense_rank"] == 1
    assert first["max_cos_to_relevant"] == pytest.approx(1.0, abs=1e-6)
    assert first["score"] == pytest.approx(1.0, abs=1e-6)
    assert first["reason"] == (
        "near-duplicate of relevant d1 (cos 1.000); in the top 3 of 4 runs; BM25 #1, dense #1"
    )

    d4 = queue.set_index(["query_id", "doc_id"]).loc[("q1", "d4")]
    # d4 shares only "solar" with q1: third in BM25 and dense (after d2, d1), in the top 3 of all 4 runs.
    # score = mean(4/4, 1/log2(4), 1/log2(4), cos(d4, d1)) = (1 + 0.5 + 0.5 + cos) / 4
    cos = _cos(DOCS["d4"], DOCS["d1"])
    assert (d4["bm25_rank"], d4["dense_rank"], d4["runs"]) == (3, 3, 4)
    assert d4["score"] == pytest.approx((2.0 + cos) / 4, abs=1e-6)
    assert d4["reason"] == f"in the top 3 of 4 runs; BM25 #3, dense #3; cos {cos:.2f} to relevant d1"
    assert not d4["near_duplicate"]

    rest = queue[~queue["near_duplicate"]]
    assert rest["score"].is_monotonic_decreasing
    # every score is the documented mean of its signals (sim only where the query has a judged relevant doc)
    for r in queue.itertuples():
        covering = 4  # every pooled run returns results for each of the three queries
        signals = [r.runs / covering]
        signals += [0.0 if pd.isna(rank) else 1 / math.log2(1 + rank) for rank in (r.bm25_rank, r.dense_rank)]
        if not math.isnan(r.max_cos_to_relevant):
            signals.append(max(0.0, r.max_cos_to_relevant))
        assert r.score == pytest.approx(sum(signals) / len(signals), abs=1e-9), r


def test_queue_near_duplicates_agree_with_label_noise(data):
    a = _analysis(data, baselines=("bm25",))
    queue = judging.judge_queue(a, k=3)
    dups = {
        (q, d)
        for q, d, n in zip(queue["query_id"], queue["doc_id"], queue["near_duplicate"], strict=True)
        if n
    }
    for name in a.run_names:
        noise = a.label_noise(name, k=3).unjudged_duplicates
        assert set(zip(noise["query_id"], noise["doc_id"], strict=True)) <= dups
    assert dups == {("q1", "d2")}


def test_queue_runs_and_limit(data):
    a = _analysis(data)
    only = judging.judge_queue(a, k=3, runs=["A"], limit=2)
    assert len(only) == 2 and set(only["retrieved_by"]) == {"A"}
    with pytest.raises(DataError, match="No run named 'nope'"):
        judging.judge_queue(a, runs=["nope"])


def test_no_golden_set_the_queue_pools_bm25_dense_and_hybrid(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    folder = _write_data(tmp_path / "log", qrels=False)
    ds = judging.load_for_judging(corpus=folder / "corpus.jsonl", queries=folder / "queries.jsonl")
    assert len(ds.qrels) == 0
    a = Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path / "cache")
    queue = judging.judge_queue(a, k=2)
    assert queue.attrs["pooled_runs"] == ["bm25", "dense", "hybrid"]
    assert set(queue["query_id"]) == set(QUERIES)  # every query with a text
    assert queue["max_cos_to_relevant"].isna().all() and not queue["near_duplicate"].any()
    top_q1 = queue[queue["query_id"] == "q1"]
    assert set(top_q1["doc_id"]) == {"d1", "d2"}  # the two documents with all three query words
    # the evaluation path still refuses empty qrels
    with pytest.raises(DataError):
        a.metrics()
    # a BEIR folder without qrels/ is accepted for judging, still refused for evaluating
    assert len(judging.load_for_judging(folder).qrels) == 0
    with pytest.raises(DataError, match="file not found"):
        load_dataset(data_dir=folder)


# ------------------------------------------------------------------------------------------------ the journal


def test_journal_appends_one_line_per_judgement_and_resumes(tmp_path, data):
    path = tmp_path / "j" / "judgements.jsonl"
    j = judging.Journal(path, judge="ann")
    j.add("q1", "d2", 2)
    before = path.read_bytes()
    j.add("q1", "d4", "skip")
    assert path.read_bytes().startswith(before)  # old lines are never rewritten
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["query_id"], x["doc_id"], x["grade"], x["judge"]) for x in lines] == [
        ("q1", "d2", 2, "ann"),
        ("q1", "d4", "skip", "ann"),
    ]
    assert set(lines[0]) == {"query_id", "doc_id", "grade", "time", "judge"}
    # resume: a new Journal on the same file sees both; judged (and skipped) pairs leave the queue
    again = judging.Journal(path)
    assert again.judgements() == {("q1", "d2"): 2, ("q1", "d4"): "skip"}
    queue = judging.judge_queue(_analysis(data), k=3)
    left = judging.pending(queue, again)
    assert len(left) == len(queue) - 2
    assert not {("q1", "d2"), ("q1", "d4")} & set(zip(left["query_id"], left["doc_id"], strict=True))
    for bad in (4, -1, True, 1.5, "high"):
        with pytest.raises(DataError, match="grade must be"):
            j.add("q1", "d3", bad)


def test_journal_ignores_a_torn_last_line_and_keeps_appending_whole_lines(tmp_path):
    path = tmp_path / "judgements.jsonl"
    j = judging.Journal(path)
    j.add("q1", "d1", 1)
    j.add("q1", "d2", 3)
    with open(path, "ab") as f:  # a crash in the middle of the third write
        f.write(b'{"query_id": "q1", "doc_id": "d')
    report = ValidationReport()
    assert j.judgements(report) == {("q1", "d1"): 1, ("q1", "d2"): 3}
    assert j.torn_lines == [3]
    (p,) = report.by_code("journal_torn_line")
    assert p.count == 1 and p.examples == ("line 3",)
    j.add("q2", "d3", 0)  # ends the torn line first, so this one stays whole
    assert j.judgements() == {("q1", "d1"): 1, ("q1", "d2"): 3, ("q2", "d3"): 0}
    assert j.torn_lines == [3]
    # a line that is valid JSON but not a judgement was edited by hand: an error naming the line
    with open(path, "a") as f:
        f.write(json.dumps({"query_id": "q2", "doc_id": "d4", "grade": 7}) + "\n")
    with pytest.raises(DataError, match="line 5"):
        j.judgements()


def test_later_judgements_win_and_merge_counts_overrides(tmp_path):
    qrels = read_qrels(_write_data(tmp_path / "d") / "qrels" / "test.tsv")
    j = judging.Journal(tmp_path / "j.jsonl")
    j.add("q1", "d5", 1)  # overrides grade 0 (changed)
    j.add("q1", "d1", 2)  # overrides grade 2 (same grade)
    j.add("q1", "d4", 0)
    j.add("q2", "d6", "skip")  # not a judgement
    j.add("q1", "d4", 3)  # the later grade wins
    assert j.as_qrels().as_dict() == {"q1": {"d5": 1, "d1": 2, "d4": 3}}
    counts = judging.merge_counts(qrels, j)
    assert counts[1:] == (3, 1, 2, 1)  # judgements, added, overridden, changed
    report = ValidationReport()
    merged = judging.merge(qrels, j, report=report)
    assert merged.as_dict() == {"q1": {"d1": 2, "d5": 1, "d4": 3}, "q2": {"d3": 1}}
    assert (
        "1 new, 2 overriding an existing grade (1 with a different grade)"
        in report.by_code("judgements_merged")[0].message
    )
    assert qrels.as_dict() == {"q1": {"d1": 2, "d5": 0}, "q2": {"d3": 1}}  # not modified


def test_exports_read_back_as_the_same_judgements(tmp_path):
    qrels = read_qrels(_write_data(tmp_path / "d") / "qrels" / "test.tsv")
    j = judging.Journal(tmp_path / "j.jsonl")
    j.add("q1", "d2", 2)
    j.add("q3", "d5", 3)
    for merged in (j.as_qrels(), judging.merge(qrels, j)):
        for write, name in ((judging.write_trec_qrels, "x.qrels"), (judging.write_beir_qrels, "x.tsv")):
            write(merged, tmp_path / name)
            assert read_qrels(tmp_path / name).as_dict() == merged.as_dict(), name
    assert (tmp_path / "x.tsv").read_text().startswith("query-id\tcorpus-id\tscore\n")
    # the journal itself and a graded judge-queue TSV are read by read_judgements (what --extra-qrels reads)
    assert judging.read_judgements(j.path).as_dict() == j.as_qrels().as_dict()
    spaced = judging.Journal(tmp_path / "s.jsonl")
    spaced.add("q 1", "d1", 1)
    with pytest.raises(DataError, match="whitespace"):
        judging.write_trec_qrels(spaced.as_qrels(), tmp_path / "bad.qrels")
    judging.write_beir_qrels(spaced.as_qrels(), tmp_path / "ok.tsv")
    assert read_qrels(tmp_path / "ok.tsv").as_dict() == {"q 1": {"d1": 1}}
    with pytest.raises(DataError, match="no judgement"):
        judging.write_trec_qrels(judging.Journal(tmp_path / "empty.jsonl").as_qrels(), tmp_path / "e.qrels")


def test_default_journal_path(tmp_path, monkeypatch):
    monkeypatch.delenv(judging.JOURNAL_ENV, raising=False)
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    folder = _write_data(tmp_path / "mydata")
    assert judging.default_journal_path(folder) == folder / "judgements.jsonl"
    assert judging.default_journal_path(folder / "queries.jsonl") == folder / "judgements.jsonl"
    assert (
        judging.default_journal_path(folder, in_data=False)
        == tmp_path / "cache" / "judgements" / "mydata.jsonl"
    )
    monkeypatch.setenv(judging.JOURNAL_ENV, str(tmp_path / "elsewhere.jsonl"))
    assert judging.default_journal_path(folder) == tmp_path / "elsewhere.jsonl"


# ------------------------------------------------------------------------------------------------ the effect


def test_judging_a_retrieved_document_relevant_turns_a_failure_into_a_hit(data, tmp_path):
    a = _analysis(data, k=3, baselines=("bm25",))
    before_ndcg = a.metrics(["ndcg@3"]).loc["A", "ndcg@3"]
    # A at k=3: q1 finds d1 (hit); q2 returns d6, d5 and misses d3 (failure)
    assert a.per_query("A", ["hit_rate@3"])["hit_rate@3"].to_dict() == {"q1": 1.0, "q2": 0.0}
    j = judging.Journal(tmp_path / "j.jsonl")
    j.add("q2", "d6", 1)  # the judge finds that d6, retrieved at rank 1, answers q2
    after = judging.with_judgements(a, j)
    assert after is not a and len(a.dataset.qrels) == 3  # the original is not changed
    assert a.metrics(["ndcg@3"]).loc["A", "ndcg@3"] == before_ndcg
    assert after.per_query("A", ["hit_rate@3"])["hit_rate@3"].to_dict() == {"q1": 1.0, "q2": 1.0}
    assert after.dataset.runs is a.dataset.runs and after.k == 3 and after.run_names == a.run_names
    effect = judging.judgement_effect(a, after)
    run = effect["runs"]["A"]
    assert effect["n_judgements"] == 1 and effect["metric"] == "ndcg@3"
    assert (run["failures_before"], run["failures_after"], run["label_gap_queries"]) == (1, 0, ["q2"])
    # q2 after: d6 (grade 1) at rank 1, d3 (grade 1) missing: DCG = 1, IDCG = 1 + 1/log2(3) -> 0.6309;
    # q1 unchanged; nDCG@3 after = (ndcg(q1) + 0.6309) / 2, before = (ndcg(q1) + 0) / 2
    q1 = a.per_query("A", ["ndcg@3"]).loc["q1", "ndcg@3"]
    assert run["before"] == pytest.approx(q1 / 2)
    assert run["after"] == pytest.approx((q1 + 1 / (1 + 1 / math.log2(3))) / 2)
    assert effect["sentences"]["A"].startswith(
        f"nDCG@3 {q1 / 2:.3f} -> {run['after']:.3f} after 1 judgement, 1 failure was a label gap"
    )


def test_with_judgements_starts_a_golden_set_from_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    folder = _write_data(tmp_path / "log", qrels=False)
    ds = judging.load_for_judging(folder, runs=[("A", folder / "A.trec")])
    a = Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path / "cache", k=3)
    j = judging.Journal(tmp_path / "j.jsonl")
    j.add("q3", "d5", 2)
    after = judging.with_judgements(a, j)
    assert after.per_query("A", ["hit_rate@1"])["hit_rate@1"].to_dict() == {"q3": 1.0}
    effect = judging.judgement_effect(a, after)
    assert effect["runs"]["A"]["before"] is None and effect["runs"]["A"]["after"] == 1.0


# ------------------------------------------------------------------------------------------------ crash safety

WRITER = """
import sys
from diagnose.judging import Journal

journal = Journal(sys.argv[1], judge="writer")
i = 0
while True:
    journal.add(f"q{i}", f"d{i}", i % 4)
    print(i, flush=True)  # acknowledged: add() returned after flush + fsync
    i += 1
"""


@pytest.mark.parametrize("acknowledged_before_kill", [1, 40, 150])
def test_kill_9_loses_no_acknowledged_judgement(tmp_path, acknowledged_before_kill):
    """A writer appends judgements in a loop and prints each index once ``add`` returned; SIGKILL lands between (or
    in the middle of) writes. Every acknowledged judgement is in the journal and reads back; at most the one being
    written when the signal came is extra or torn. (SIGKILL tests what the process loses, not the disk: the fsync
    in ``add`` is what makes an acknowledged line survive a power cut as well.)"""
    path = tmp_path / "judgements.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    acked: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(acked) < acknowledged_before_kill and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(int(line))
        os.kill(proc.pid, signal.SIGKILL)
        # read the rest through the same buffered file: communicate() would read the descriptor directly and
        # lose acknowledgements readline() had already buffered
        rest = proc.stdout.read()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    acked += [int(x) for x in rest.split()]
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= acknowledged_before_kill
    report = ValidationReport()
    got = judging.Journal(path).judgements(report)
    for i in acked:
        assert got.get((f"q{i}", f"d{i}")) == i % 4, f"acknowledged judgement {i} is missing"
    assert len(got) - len(acked) in (0, 1)
    assert len(report.by_code("journal_torn_line")) <= 1


# ------------------------------------------------------------------------------------------------ the CLI


def _vectors(folder: Path) -> list[str]:
    """Precomputed vectors (the keyword encoder's) so the CLI loads no model."""
    enc = KeywordEncoder()
    np.save(folder / "docs.npy", enc.encode(list(DOCS.values())))
    np.save(folder / "queries.npy", enc.encode(list(QUERIES.values())))
    (folder / "doc_ids.txt").write_text("\n".join(DOCS) + "\n")
    (folder / "query_ids.txt").write_text("\n".join(QUERIES) + "\n")
    return [
        "--doc-embeddings",
        str(folder / "docs.npy"),
        "--doc-ids",
        str(folder / "doc_ids.txt"),
        "--query-embeddings",
        str(folder / "queries.npy"),
        "--query-ids",
        str(folder / "query_ids.txt"),
    ]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_judge_queue_without_a_golden_set_then_evaluate_with_the_grades(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    folder = _write_data(tmp_path / "log", qrels=False)
    vecs = _vectors(folder)
    out_tsv = tmp_path / "queue.tsv"
    code, _, err = run_cli(
        capsys,
        "judge-queue",
        "--queries",
        folder / "queries.jsonl",
        "--corpus",
        folder / "corpus.jsonl",
        "--k",
        "2",
        "--limit",
        "4",
        "--out",
        out_tsv,
        *vecs,
    )
    assert code == 0, err
    assert "wrote 4 pairs" in err
    lines = out_tsv.read_text().splitlines()
    assert lines[0].split("\t") == judging.QUEUE_TSV_COLUMNS
    rows = [x.split("\t") for x in lines[1:]]
    assert len(rows) == 4 and all(r[-1] == "" for r in rows)
    assert [r[4] for r in rows] == ["1", "2", "3", "4"]
    by_id = {r[2]: r[3] for r in rows}
    assert all(by_id[d] == DOCS[d] for d in by_id)  # the document text beside its id

    # grade the first pair 2, skip the second, leave the rest empty
    graded = [lines[0], *("\t".join(r[:-1] + [g]) for r, g in zip(rows, ["2", "skip", "", ""], strict=True))]
    (tmp_path / "graded.tsv").write_text("\n".join(graded) + "\n")
    q, d = rows[0][0], rows[0][2]
    (tmp_path / "run.trec").write_text(f"{q} Q0 {d} 1 1.0 r\n")
    code, out, err = run_cli(
        capsys,
        "evaluate",
        "--extra-qrels",
        tmp_path / "graded.tsv",
        "--run",
        tmp_path / "run.trec",
        "--k",
        "1",
        "--metrics",
        "hit_rate",
        "--format",
        "json",
    )
    assert code == 0, err
    assert "merged 1 judgement from" in err and "1 new, 0 overriding" in err
    assert json.loads(out)["runs"]["run"]["aggregate"]["hit_rate@1"] == 1.0

    # without any golden set, evaluate is still an error
    code, _, err = run_cli(capsys, "evaluate", "--run", tmp_path / "run.trec")
    assert code == 2 and "No golden set given" in err


def test_cli_extra_qrels_merges_a_journal_and_reports_overrides(data, tmp_path, capsys):
    j = judging.Journal(tmp_path / "j.jsonl")
    j.add("q2", "d6", 1)  # new: turns A's failure on q2 into a hit at k=1
    j.add("q1", "d1", 1)  # overrides grade 2
    args = [
        "--data",
        data,
        "--run",
        f"A={data / 'A.trec'}",
        "--k",
        "1",
        "--metrics",
        "hit_rate",
        "--format",
        "json",
    ]
    code, out, _ = run_cli(capsys, "evaluate", *args)
    assert code == 0 and json.loads(out)["runs"]["A"]["aggregate"]["hit_rate@1"] == 0.5
    code, out, err = run_cli(capsys, "evaluate", *args, "--extra-qrels", j.path)
    assert code == 0, err
    assert (
        "merged 2 judgements" in err
        and "1 new, 1 overriding an existing grade (1 with a different grade)" in err
    )
    assert json.loads(out)["runs"]["A"]["aggregate"]["hit_rate@1"] == 1.0
    # failures takes the same option: with the journal, q2 no longer fails at k=1
    code, out, err = run_cli(
        capsys,
        "failures",
        "--data",
        data,
        "--run",
        f"A={data / 'A.trec'}",
        "--k",
        "1",
        "--format",
        "json",
        "--no-remedies",
        "--extra-qrels",
        j.path,
        *_vectors(data),
    )
    assert code == 0, err
    assert {f["query_id"] for f in json.loads(out)["failures"]} == set()


def test_cli_judge_queue_with_a_golden_set_leaves_merged_judgements_out(data, tmp_path, capsys):
    vecs = _vectors(data)
    base = ["judge-queue", "--data", data, "--run", f"A={data / 'A.trec'}", "--k", "3", *vecs]
    code, out, err = run_cli(capsys, *base)
    assert code == 0, err
    first = out.splitlines()[1].split("\t")
    assert (first[0], first[2]) == ("q1", "d2") and first[5].startswith("near-duplicate of relevant d1")
    j = judging.Journal(tmp_path / "j.jsonl")
    j.add("q1", "d2", 2)
    code, out2, err = run_cli(capsys, *base, "--extra-qrels", j.path)
    assert code == 0, err
    assert len(out2.splitlines()) == len(out.splitlines()) - 1
    assert "q1\tsolar panel installation\td2\t" not in out2
