"""Inputs built to hurt the reader rather than to be read (issue 22): JSON lines nested deep enough to overflow a
parser's stack, and gzip bombs. Each must end in a DataError naming the file (and the line), in bounded memory,
never in a crash. A crash would kill pytest itself, so those cases run in a subprocess."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from diagnose.data import DataError
from diagnose.io import read_corpus, read_queries, read_run
from diagnose.io.nesting import MAX_JSON_DEPTH, json_depth

ROOT = Path(__file__).resolve().parents[1]

# -- deep nesting ----------------------------------------------------------------------------------------------------

_READ_SCRIPT = """
import sys
from diagnose.data import DataError
from diagnose.io import read_corpus, read_queries

reader = read_corpus if sys.argv[1] == "corpus" else read_queries
try:
    reader(sys.argv[2])
except DataError as e:
    print(e)
"""


@pytest.mark.parametrize("kind", ["corpus", "queries"])
def test_a_line_nested_100000_deep_is_refused_before_pyarrow_sees_it(tmp_path, kind):
    """Before: pyarrow.json.read_json overflowed its stack and the process died with SIGSEGV (return code -11, no
    message). Now the byte scan refuses line 2 before any parser runs."""
    deep = "[" * 100_000 + "]" * 100_000  # valid JSON, 100,000 levels
    path = tmp_path / f"{kind}.jsonl"
    path.write_text(
        f'{{"_id": "a", "text": "one"}}\n{{"_id": "b", "text": "two", "metadata": {{"x": {deep}}}}}\n'
    )
    done = subprocess.run(
        [sys.executable, "-c", _READ_SCRIPT, kind, str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    # 100,000 arrays inside "metadata" and "x" objects inside the line's object: 100,002 levels
    assert f"{kind}.jsonl:2: JSON nested 100,002 levels deep, more than the {MAX_JSON_DEPTH}" in done.stdout


@pytest.mark.parametrize("reader", [read_corpus, read_queries])
def test_a_line_nested_500_objects_deep_is_a_message_on_both_paths(tmp_path, both_paths, reader):
    """Before: 500 nested objects parsed (pyarrow and json both manage), then flattening them recursed 500 times
    and the read ended in an internal RecursionError, on both paths."""
    nested = '{"a": ' * 500 + "1" + "}" * 500
    path = tmp_path / "records.jsonl"
    path.write_text(f'{{"_id": "a", "text": "one"}}\n\n{{"_id": "b", "text": "two", "metadata": {nested}}}\n')
    # the line's object, then the 500 nested objects of "metadata": 501 levels
    with pytest.raises(DataError, match=r"records\.jsonl:3: JSON nested 501 levels deep"):
        reader(path)


def test_brackets_inside_strings_do_not_count(tmp_path, both_paths):
    text = "[" * 5000 + "{" * 5000  # 10,000 opening brackets, all inside a string: depth 1
    path = tmp_path / "corpus.jsonl"
    path.write_text(f'{{"_id": "a", "text": "{text}"}}\n{{"_id": "b", "text": "\\"[[[ {text}"}}\n')
    corpus = read_corpus(path)
    assert list(corpus.ids) == ["a", "b"]
    assert json_depth(f'{{"t": "{text}", "l": [[1]]}}'.encode()) == 3  # the object, then two arrays


def test_a_deep_line_in_a_line_by_line_reader_is_named(tmp_path):
    """The JSONL run reader parses line by line with ``json``: a deep line is refused with its line number (it was
    already a message before, through RecursionError; now the scan says how deep)."""
    path = tmp_path / "run.jsonl"
    deep = "[" * 2000 + "]" * 2000
    path.write_text(f'{{"query_id": "q1", "doc_ids": ["d1"]}}\n{{"query_id": "q2", "doc_ids": {deep}}}\n')
    with pytest.raises(DataError, match=r"run\.jsonl:2: .*nested too deeply \(more than 100 levels"):
        read_run(path)


# -- gzip bombs ------------------------------------------------------------------------------------------------------

_BOMB_SCRIPT = """
import resource, sys
from diagnose.data import DataError
from diagnose.io import read_run

read_run(sys.argv[2])  # a small gzip file first: imports and their peak memory are behind us
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    read_run(sys.argv[1])
    print("read")
except DataError as e:
    print(e)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024)
"""


def _bomb(path: Path, members: int, member_bytes: int) -> None:
    """``members`` gzip members of ``member_bytes`` zeros each, written one after the other (a valid gzip file)."""
    one = gzip.compress(b"\0" * member_bytes, compresslevel=9)
    with open(path, "wb") as f:
        for _ in range(members):
            f.write(one)


def test_a_gzip_bomb_is_refused_in_bounded_memory(tmp_path):
    """Before: every decompressed chunk was kept up to the limit, then joined: the peak was twice the limit (here
    +512 MiB for a 256 MiB limit) before the refusal. Now the size is counted without keeping anything."""
    limit = 256 * 2**20
    bomb = tmp_path / "run.trec.gz"
    _bomb(bomb, members=64, member_bytes=16 * 2**20)  # 64 x 16 MiB = 1 GiB of zeros, ~1 MB on disk
    small = tmp_path / "small.trec.gz"
    small.write_bytes(gzip.compress(b"q1 Q0 d1 1 1.0 t\n"))
    done = subprocess.run(
        [sys.executable, "-c", _BOMB_SCRIPT, str(bomb), str(small)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "DIAGNOSE_MAX_INPUT_BYTES": str(limit)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    message, grew = done.stdout.strip().rsplit("\n", 1)
    assert "run.trec.gz: decompresses to more than the input limit of 256.0 MiB" in message
    assert int(grew) < limit // 4, f"peak memory grew by {int(grew) / 2**20:.0f} MiB"


def test_gzip_members_and_zero_padding_read_as_gzip_reads_them(tmp_path):
    """Two members and zero padding after them (GzipFile accepts both): the same lines as the plain file."""
    lines = [b"q1 Q0 d1 1 2.0 t\n", b"q1 Q0 d2 2 1.0 t\n", b"q2 Q0 d1 1 3.0 t\n"]
    plain = tmp_path / "run.trec"
    plain.write_bytes(b"".join(lines))
    packed = tmp_path / "packed.trec.gz"
    packed.write_bytes(gzip.compress(lines[0]) + gzip.compress(b"".join(lines[1:])) + b"\0" * 1000)
    with gzip.open(packed) as gz:
        assert gz.read() == plain.read_bytes()
    assert read_run(packed).df.equals(read_run(plain).df)


@pytest.mark.parametrize("damage", ["truncated", "bad_crc"])
def test_a_damaged_gzip_is_refused(tmp_path, damage):
    data = gzip.compress(b"q1 Q0 d1 1 2.0 t\n" * 1000)
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data = data[:-8] + (zlib.crc32(b"other") & 0xFFFFFFFF).to_bytes(4, "little") + data[-4:]
    path = tmp_path / "run.trec.gz"
    path.write_bytes(data)
    with pytest.raises(DataError, match=r"run\.trec\.gz: is not a valid gzip file"):
        read_run(path)
