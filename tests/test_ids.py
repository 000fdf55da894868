"""Fingerprints of ids (diagnose.ids), shared by the run reader and the metric join."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import diagnose.io.run_order as run_order
from diagnose.data import ValidationReport
from diagnose.ids import fingerprints, pair_keys
from diagnose.io import read_run


def test_fingerprints_depend_only_on_the_string():
    short = pa.array(["d1", "abc", "", "é"], type=pa.large_string())
    long = pa.array(
        ["a much longer document identifier", "d1", "abc", "", "é", "abd"], type=pa.large_string()
    )
    fs, fl = fingerprints(short), fingerprints(long)
    assert list(fs) == list(fl[1:5])  # same strings, same fingerprints, whatever the widest string
    assert len(set(fl.tolist())) == len(fl)  # different strings differ here
    sliced = long.slice(1, 3)  # an Arrow slice has a non-zero offset into the buffers
    assert list(fingerprints(sliced)) == list(fs[:3])


def test_fingerprints_ignore_the_string_type_and_the_chunks():
    ids = ["d1", "abc", "", "é", "a much longer document identifier"]
    large = fingerprints(pa.array(ids, type=pa.large_string()))
    assert list(fingerprints(pa.array(ids, type=pa.string()))) == list(large)
    chunked = pa.chunked_array([pa.array(ids[:2]), pa.array(ids[2:])])
    assert list(fingerprints(chunked)) == list(large)
    assert list(fingerprints(pa.chunked_array([], type=pa.string()))) == []
    assert list(fingerprints(pa.array(ids).slice(1, 3))) == list(large[1:4])  # int32 offsets, non-zero offset
    assert list(fingerprints(pa.array(ids).dictionary_encode())) == list(large)


def test_every_byte_counts():
    # ids that differ only in their middle (same length, prefix and suffix) must not collide
    urls = [f"https://en.wikipedia.org/wiki/Article_{i:07d}#section" for i in range(0, 10_000_000, 997)]
    fp = fingerprints(pa.array(urls))
    assert len(np.unique(fp)) == len(urls)
    keys = pair_keys(fp, np.zeros(len(fp), dtype=np.int64))
    assert len(np.unique(keys)) == len(urls)
    # the same doc under two queries gets two keys; a query code of -1 (not judged) is a key like any other
    one = fingerprints(pa.array(["d", "d", "d"]))
    assert len(set(pair_keys(one, np.array([0, 1, -1])).tolist())) == 3


def test_repeated_documents_are_found_on_the_ids_when_every_fingerprint_collides(tmp_path, monkeypatch):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 a 3 1 t\nq2 Q0 a 1 1 t\nq2 Q0 c 2 0.5 t\n")
    expected_report = ValidationReport()
    expected = read_run(path, report=expected_report).df
    monkeypatch.setattr(run_order, "fingerprints", lambda arr: np.zeros(len(arr), dtype=np.uint64))
    report = ValidationReport()
    got = read_run(path, report=report).df
    assert got.equals(expected)
    assert list(got["doc_id"]) == ["a", "b", "a", "c"]  # q1's second "a" dropped; q2's "a" is another pair
    counts = [(p.code, p.count) for p in report.problems]
    assert counts == [(p.code, p.count) for p in expected_report.problems]
    assert ("duplicate_doc_in_run", 1) in counts
