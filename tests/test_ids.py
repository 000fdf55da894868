"""Fingerprints of ids (diagnose.runtime.ids), shared by the run reader and the metric join."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import diagnose.io.run_order as run_order
import diagnose.runtime.ids
from diagnose.data import ValidationReport
from diagnose.io import read_run
from diagnose.runtime.ids import fingerprints, pair_keys


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


def test_large_chunks_are_hashed_one_by_one_with_the_same_fingerprints(monkeypatch):
    ids = [f"doc-{i}" * (1 + i % 7) for i in range(5000)]
    whole = fingerprints(pa.array(ids))
    calls = []
    real = diagnose.runtime.ids.string_bytes
    monkeypatch.setattr(diagnose.runtime.ids, "string_bytes", lambda arr: calls.append(len(arr)) or real(arr))
    monkeypatch.setattr(diagnose.runtime.ids, "CHUNK_BY_CHUNK", 1000)
    chunked = pa.chunked_array([pa.array(ids[:1200]), pa.array(ids[1200:3000]), pa.array(ids[3000:])])
    assert list(fingerprints(chunked)) == list(whole)
    assert calls == [1200, 1800, 2000]  # chunk by chunk
    calls.clear()
    # 500 strings per chunk: combined first
    small = pa.chunked_array([pa.array(ids[i : i + 500]) for i in range(0, 5000, 500)])
    assert list(fingerprints(small)) == list(whole)
    assert calls == [5000]


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


_LONG_ID_SCRIPT = """
import numpy as np
import pyarrow as pa

gathered = [0]
real_minimum = np.minimum


def counting_minimum(a, b, *args, **kwargs):  # called once per pass over the strings that have a word j
    gathered[0] += np.size(a)
    return real_minimum(a, b, *args, **kwargs)


np.minimum = counting_minimum
from diagnose.runtime.ids import fingerprints

n_short, long_bytes = 20_000, 40_000_000
long_id = "x" * long_bytes
ids = [f"d{i}" for i in range(n_short)] + [long_id, "d7", long_id[:-1] + "y", long_id]
fp = fingerprints(pa.array(ids, type=pa.large_string()))
assert fp[n_short] == fp[n_short + 3] and fp[n_short + 1] == fp[7], "equal strings, equal fingerprints"
assert len(set(fp.tolist())) == n_short + 2, "the two 40 MB ids that differ in their last byte differ"
total = sum(len(s) for s in ids)
print(gathered[0], total)
"""


def test_one_huge_id_costs_its_bytes_not_its_length_times_every_id():
    """Before: the word loop ran once per 8 bytes of the longest id (5,000,000 passes for a 40 MB id) over every
    id, so a run with one huge id never finished (the subprocess hit its timeout). Now the words gathered are at
    most one per 8 bytes of the short ids (the long ones are hashed whole, once): linear in the bytes."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _LONG_ID_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    gathered, total = map(int, done.stdout.split())
    # the 20,001 short ids ("d0".."d19999", "d7") hold at most 6 bytes: one word each, 20,001 words
    assert gathered == 20_001
    assert total > 120_000_000  # three 40 MB ids were fingerprinted
