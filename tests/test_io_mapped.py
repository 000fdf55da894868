"""A large run file is parsed in place (``read_mapped``: a memory map, not a copy): same bytes, same checks and
errors as ``read_bytes``, and the same run, problems and errors as when it is read."""

from __future__ import annotations

import codecs
import gzip
import json
import mmap
from pathlib import Path

import pytest

from diagnose.data import DataError, ValidationReport
from diagnose.io import files, read_run
from diagnose.io.files import as_bytes, read_bytes, read_mapped

TREC = b"".join(
    f"q{q} Q0 d{(7 * q + 3 * r) % 50} {r + 1} {10 - r // 2}.5 tag\n".encode()
    for q in range(4)
    for r in range(12)
)


@pytest.fixture
def map_all(monkeypatch):
    """Every plain file mapped, whatever its size."""
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_large_plain_file_is_mapped_and_a_small_one_read(tmp_path, monkeypatch):
    monkeypatch.setattr(
        files, "MAP_MIN_BYTES", 4 * len(TREC)
    )  # the real threshold (256 MiB) is too big to write
    big = _write(tmp_path, "big.trec", TREC * (files.MAP_MIN_BYTES // len(TREC) + 1))
    small = _write(tmp_path, "small.trec", TREC)
    mapped = read_mapped(big, "a run")
    assert isinstance(mapped, mmap.mmap)
    assert as_bytes(mapped) == big.read_bytes() == read_bytes(big, "a run")
    # "in" as in bytes (a plain map's walks it byte by byte, and finds single bytes only)
    for needle in (b"Q0 d", b"q3 Q0", b" ", ord("q"), b"\x0b", b"Q0  d"):
        assert (needle in mapped) == (needle in TREC)
    assert read_mapped(small, "a run") == TREC and isinstance(read_mapped(small, "a run"), bytes)


@pytest.mark.usefixtures("map_all")
@pytest.mark.parametrize(
    "name,data",
    [
        ("run.trec.gz", gzip.compress(TREC, mtime=0)),  # gunzipped
        ("run.trec", codecs.BOM_UTF8 + TREC),  # the mark removed
        ("run.trec", b""),  # nothing to map
    ],
    ids=["gzip", "utf-8 mark", "empty"],
)
def test_what_cannot_be_mapped_is_read(tmp_path, name, data):
    path = _write(tmp_path, name, data)
    out = read_mapped(path, "a run")
    assert isinstance(out, bytes) and out == read_bytes(path, "a run")


@pytest.mark.usefixtures("map_all")
@pytest.mark.parametrize("case", ["utf16", "too_big", "missing", "folder"])
def test_a_mapped_file_is_refused_like_a_read_one(tmp_path, monkeypatch, case):
    path = tmp_path / "run.trec"
    if case == "utf16":
        path.write_bytes(codecs.BOM_UTF16_LE + TREC.decode().encode("utf-16-le"))
    elif case == "too_big":
        path.write_bytes(TREC)
        monkeypatch.setenv(files.MAX_INPUT_BYTES_ENV, str(len(TREC) - 1))
    elif case == "folder":
        path.mkdir()
    errors = []
    for reader in (read_mapped, read_bytes):
        with pytest.raises(DataError) as e:
            reader(path, "a run")
        errors.append(str(e.value))
    assert errors[0] == errors[1] and str(path) in errors[0]


def test_read_run_maps_a_large_trec_run(tmp_path, monkeypatch):
    """The whole reader takes the mapped path (not only read_mapped on its own)."""
    path = _write(tmp_path, "run.trec", TREC)
    maps = []

    class Spy(files.MappedFile):
        def __new__(cls, *args, **kwargs):
            maps.append(args)
            return super().__new__(cls, *args, **kwargs)

    monkeypatch.setattr(files, "MappedFile", Spy)
    read_run(path)
    assert not maps  # below the threshold: read
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    read_run(path)
    assert len(maps) == 1


def _jsonl() -> bytes:
    lists: dict[str, list] = {}
    for line in TREC.decode().splitlines():
        q, _, d, _, s, _ = line.split()
        lists.setdefault(q, []).append({"doc_id": d, "score": float(s)})
    return "".join(json.dumps({"query_id": q, "results": r}) + "\n" for q, r in lists.items()).encode()


RUNS = {
    "spaces": TREC,
    "tabs": TREC.replace(b" ", b"\t"),
    "vertical tab": TREC.replace(b" Q0 ", b"\x0bQ0 "),  # any run of whitespace separates, like trec_eval
    "form feed": TREC.replace(b" Q0 ", b"\x0cQ0\x0c"),
    "mixed blanks": TREC.replace(b" Q0 ", b" \t Q0  "),
    "no final newline": TREC.rstrip(b"\n"),
    "comment": b"# written by a tool\n" + TREC,
    "not utf-8": TREC.replace(b"d3 ", b"d\xff3 ", 1),
    "duplicate pair": TREC + TREC.splitlines(keepends=True)[0],
    "rank column disagrees": TREC.replace(b" 1 10.5 ", b" 7 10.5 "),
    "extra field": TREC.replace(b"tag\n", b"tag extra\n", 1),
    "qrels, not a run": b"q1 0 d1 1\nq1 0 d2 0\n",
    "not finite": TREC.replace(b"10.5", b"nan", 1),
    "jsonl": _jsonl(),
}


def _outcome(path: Path) -> tuple:
    report = ValidationReport()
    try:
        run = read_run(path, name="r", report=report)
    except DataError as e:
        return ("error", str(e))
    return ("run", run.df.to_dict("list"), [p.to_dict() for p in report.problems])


@pytest.mark.parametrize("case", sorted(RUNS))
def test_a_mapped_run_reads_like_a_read_one(tmp_path, monkeypatch, case):
    path = _write(tmp_path, "run.jsonl" if case == "jsonl" else "run.trec", RUNS[case])
    read = _outcome(path)
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    assert _outcome(path) == read
