"""diagnose.runtime.threads and the searches that run their blocks in threads: the same results, in the same order, as
the serial loop (tested with random and with tied vectors; no timing is asserted)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from diagnose import embed
from diagnose.embed import dense_rank_range, dense_search
from diagnose.runtime import threads as blocks


def test_in_threads_keeps_the_order_of_the_items():
    names = set()

    def square(x):
        names.add(threading.current_thread().name)
        return x * x

    assert blocks.in_threads(square, range(7), workers=3) == [0, 1, 4, 9, 16, 25, 36]
    assert all(n.startswith("diagnose") for n in names)  # ran in the pool, not in the caller


def test_in_threads_with_one_worker_or_item_runs_in_the_caller():
    me = threading.current_thread().name
    assert blocks.in_threads(lambda x: threading.current_thread().name, [1, 2], workers=1) == [me, me]
    assert blocks.in_threads(lambda x: threading.current_thread().name, [1], workers=4) == [me]
    assert blocks.in_threads(lambda x: x, [], workers=4) == []


def test_in_threads_raises_the_first_error_after_every_call_ended():
    done = []

    def f(x):
        if x in (1, 3):
            raise ValueError(f"item {x}")
        done.append(x)

    with pytest.raises(ValueError, match="item 1"):
        blocks.in_threads(f, range(5), workers=2)
    assert sorted(done) == [0, 2, 4]


def test_blocks_in_threads_run_their_products_in_one_blas_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads(
        _,
    ):  # numpy's BLAS, which runs the blocks' products; another library's may run on OpenMP,
        # whose thread count is each thread's own (faiss' OpenBLAS: limited in the main thread, not in others)
        return [
            i["num_threads"]
            for i in threadpoolctl.threadpool_info()
            if i["user_api"] == "blas" and "numpy" in i["filepath"]
        ]

    assert blas_threads(0)  # numpy's BLAS is found, so the check below checks something
    assert blocks.in_threads(blas_threads, range(2), workers=2) == [[1] * len(blas_threads(0))] * 2


def test_one_blas_thread_is_restored_by_the_last_of_overlapping_users():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    before = blas()
    a, b = blocks.one_blas_thread(), blocks.one_blas_thread()
    a.__enter__()
    b.__enter__()  # entered while a holds the limit: it must not take 1 as the limit to restore
    a.__exit__(None, None, None)
    assert blas() == [1] * len(before)  # b still runs
    b.__exit__(None, None, None)
    assert blas() == before


def test_available_cpus_is_at_least_one():
    assert blocks.available_cpus() >= 1


def _unit(rng, n, dim, levels=None):
    x = rng.normal(size=(n, dim))
    if levels:  # coarse values: many documents share a score, so ties straddle the blocks and the top-k cut
        x = np.round(x * levels)
        x[np.all(x == 0, axis=1), 0] = 1
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("levels", [None, 1])
@pytest.mark.parametrize("block_size", [3, 8, 50])
def test_dense_search_ranked_in_threads_equals_the_serial_loop(monkeypatch, levels, block_size):
    monkeypatch.setattr(embed.search, "BLOCK_ELEMENTS", 40)  # several query blocks: 40 // 8 = 5 queries each
    rng = np.random.default_rng(17)
    q, d = _unit(rng, 23, 4, levels), _unit(rng, 120, 4, levels)
    d[100] = d[3]
    qr = rng.integers(0, 23, 30)
    dr = rng.integers(0, 120, 30)
    dr[:2] = (3, 100)
    runs = {}
    for cpus in (1, 2, 3):
        monkeypatch.setattr(blocks, "available_cpus", lambda cpus=cpus: cpus)
        runs[cpus] = embed.search.dense_search_ranked(q, d, 7, qr, dr, block_size=block_size)
    for cpus in (2, 3):
        for got, want in zip(runs[cpus][:2] + runs[cpus][2], runs[1][:2] + runs[1][2], strict=True):
            np.testing.assert_array_equal(got, want)
    # and the serial loop is the brute force: top 7 by score, ties by the lower index; ranks from float64
    idx, _, (best, worst) = runs[1]
    s = q @ d.T
    ref = np.argsort(-s, axis=1, kind="stable")[:, :7]
    np.testing.assert_array_equal(np.take_along_axis(s, idx, axis=1), np.take_along_axis(s, ref, axis=1))
    if levels is None:  # no ties: the same documents
        np.testing.assert_array_equal(idx, ref)
    ref_best, ref_worst = dense_rank_range(q, d, qr, dr, block_size=1000)
    assert best.tolist() == ref_best.tolist() and worst.tolist() == ref_worst.tolist()


def test_dense_search_blocks_better_than_the_whole_top_k(monkeypatch):
    # every block beats the running top 2 with all its 5 documents: the merge of the few scores above the k-th
    # gives up on those blocks (5 > 2 candidates) and partitions them; the result is still the brute force
    rng = np.random.default_rng(2)
    q = _unit(rng, 4, 6)
    d = _unit(rng, 40, 6)
    order = np.argsort(d @ q[0])  # documents by ascending score for query 0: later blocks are better
    d = d[order]
    partitioned = []
    real = embed.search._top_k_block
    monkeypatch.setattr(embed.search, "_top_k_block", lambda s, kk: partitioned.append(1) or real(s, kk))
    idx, sc = dense_search(q, d, 2, block_size=5)
    assert len(partitioned) == 8  # 40 documents / 5: every block was partitioned
    np.testing.assert_array_equal(idx, np.argsort(-(q @ d.T), axis=1, kind="stable")[:, :2])
    assert idx[0].tolist() == [39, 38]


def test_bm25_run_ranked_in_threads_equals_the_serial_loop(monkeypatch):
    from diagnose import lexical
    from diagnose.lexical import BM25Index

    monkeypatch.setattr(lexical.bm25, "_BLOCK_CELLS", 12)  # 12 // 6 documents = 2 queries per score block
    texts = [
        "vpn token reset",
        "reset the password",
        "vpn vpn client",
        "token",
        "password token vpn",
        "linux",
    ]
    index = BM25Index.build(texts, [f"d{i}" for i in range(6)])
    qids = [f"q{i}" for i in range(7)]
    queries = ["vpn", "reset password", "token vpn", "linux client", "nothing here", "password", "vpn token"]
    pairs = [("q0", "d2"), ("q1", "d1"), ("q4", "d0"), ("q6", "d4"), ("q6", "d5"), ("q3", "d5")]
    got = {}
    for cpus in (1, 3):
        monkeypatch.setattr(blocks, "available_cpus", lambda cpus=cpus: cpus)
        got[cpus] = index.to_run_ranked(qids, queries, pairs, depth=3)
    (run1, ranks1), (run3, ranks3) = got[1], got[3]
    assert run1.df.equals(run3.df) and ranks1 == ranks3
    # q4 matches nothing and d5 has no term of q6: no rank; "linux" is in d5 only: q3's best document
    assert ranks1[("q4", "d0")][:2] == (None, None) and ranks1[("q6", "d5")][:2] == (None, None)
    assert ranks1[("q3", "d5")][:2] == (1, 1)
    assert set(run1.df["query_id"]) == {"q0", "q1", "q2", "q3", "q5", "q6"}


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (1, 1), (4, 7)])
def test_nonzero_2d_is_numpys_nonzero(shape):
    mask = np.random.default_rng(1).random(shape) < 0.3
    if mask.size:
        mask[-1, -1] = True  # the last cell: the divmod of the largest flat position
    rows, cols = blocks.nonzero_2d(mask)
    want_rows, want_cols = np.nonzero(mask)
    assert rows.tolist() == want_rows.tolist() and cols.tolist() == want_cols.tolist()


def test_label_noise_reads_the_same_text_rows_found_beside_the_bm25_build(tmp_path, monkeypatch):
    import json
    import shutil
    from pathlib import Path

    import diagnose
    from diagnose.embed import KeywordEncoder
    from diagnose.failures import golden
    from diagnose.failures.golden import find_label_noise

    demo = tmp_path / "demo"  # the demo with a copy of its first document under another id: same text
    shutil.copytree(Path(__file__).resolve().parents[1] / "demo_corpus", demo)
    with (demo / "corpus.jsonl").open("r+", encoding="utf-8") as f:
        first = json.loads(f.readline())
        f.seek(0, 2)
        f.write(json.dumps(first | {"_id": "zz-copy"}) + "\n")
    threads_used = []
    real = golden.same_text_rows  # the analysis imports it from its home when the step runs
    monkeypatch.setattr(
        golden, "same_text_rows", lambda c: threads_used.append(threading.current_thread().name) or real(c)
    )
    a = diagnose.Analysis(
        diagnose.load(demo), {"ann": str(demo / "runs" / "ann_minilm.trec")}, encoder=KeywordEncoder(),
        cache_dir=tmp_path / "cache",
    )  # fmt: skip
    a.diagnosis("ann")  # infers the run's kind: builds the BM25 index, the same-text rows beside it
    noise = a.label_noise("ann")
    assert threads_used == ["diagnose-same-text"]  # once, in the background thread
    want = find_label_noise(
        a.dataset, a.runs["ann"], a.space, k=a.k, duplicate_cosine=a.thresholds.duplicate_cosine
    )
    assert noise.to_dict() == want.to_dict()
    same = noise.duplicate_documents[noise.duplicate_documents["same_text"]]
    assert same[["doc_id", "duplicate_of"]].values.tolist() == [["zz-copy", first["_id"]]]
    # a corpus too large for the near-duplicate search reads only the duplicates' ids: the same rows
    large = find_label_noise(a.dataset, a.runs["ann"], a.space, k=a.k, max_docs_for_near_duplicates=10)
    assert large.duplicate_documents.values.tolist() == same.values.tolist()


def test_no_thread_can_be_started_the_work_runs_in_the_callers_thread(tmp_path, monkeypatch):
    """Under an address-space limit Python may fail to start a thread ("can't start new thread"): the runs read
    beside the golden set and the tie audit beside the evaluations then run in the calling thread, with the same
    results; the failure counts as running out of memory (the command line says how much it needed)."""
    import threading

    from diagnose import Analysis
    from diagnose.io import load_dataset
    from diagnose.runtime.memory import is_out_of_memory

    (tmp_path / "qrels.trec").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "run.trec").write_text(
        "q1 Q0 d1 1 1.0 r\nq1 Q0 d3 2 1.0 r\nq2 Q0 d4 1 2.0 r\nq2 Q0 d2 2 1.0 r\n"
    )

    def report() -> tuple:
        ds = load_dataset(qrels=tmp_path / "qrels.trec", runs=[f"r={tmp_path / 'run.trec'}"])
        rep = Analysis(ds, k=2, ks=[1, 2]).evaluation_report()
        return rep.evaluations["r"].aggregate, rep.ties["r"].aggregate, [p.code for p in ds.report]

    expected = report()
    failure = RuntimeError("can't start new thread")

    def refuse(self):
        raise failure

    monkeypatch.setattr(
        "diagnose.runtime.threads.available_cpus", lambda: 1
    )  # the reader's own blocks: serial here
    monkeypatch.setattr("diagnose.io.dataset.available_cpus", lambda: 2)
    monkeypatch.setattr("diagnose.analysis.scores.available_cpus", lambda: 2)
    monkeypatch.setattr(threading.Thread, "start", refuse)
    assert report() == expected
    assert is_out_of_memory(failure)
