"""Fuzzing the readers: whatever the bytes, ``diagnose evaluate`` exits 0 or 2 with a message, never a traceback.

Inputs are random bytes, and mutations of the valid demo files (byte flips, truncation, duplicated lines, inserted
NUL / CR / huge numbers / full-width digits / bytes that are not UTF-8). Each goes through the CLI (exit code and
stderr checked) and through every reader directly (a DataError is the only exception allowed). Both the pyarrow
fast paths and the line-by-line paths are exercised. About 150 examples in all, a few seconds; set FUZZ_SCALE=20
to fuzz 20 times longer locally.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diagnose.io as dio
from diagnose.cli import main
from diagnose.data import DataError, ValidationReport

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"


def _head(path: Path, n: int) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[:n])


def _sources() -> dict[str, tuple[str, bytes]]:
    """role:name -> (suffix, valid bytes): small slices of the demo files, and the same run and qrels in every
    format the readers know."""
    trec = _head(DEMO / "runs" / "bm25_langchain.trec", 300)
    rows = [line.split() for line in trec.decode().splitlines()]
    by_query: dict[str, list[dict]] = {}
    for q, _, d, _, s, _ in rows:
        by_query.setdefault(q, []).append({"doc_id": d, "score": float(s)})
    jsonl = "".join(json.dumps({"query_id": q, "results": r}) + "\n" for q, r in by_query.items()).encode()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["query_id", "doc_id", "score", "rank"])
    writer.writerows([q, d, s, r] for q, _, d, r, s, _ in rows)
    qrels_tsv = (DEMO / "qrels" / "test.tsv").read_bytes()
    judged = [line.split("\t") for line in qrels_tsv.decode().splitlines()[1:]]
    qrels_trec = "".join(f"{q} 0 {d} {g.strip()}\n" for q, d, g in judged).encode()
    grouped: dict[str, dict[str, int]] = {}
    for q, d, g in judged:
        grouped.setdefault(q, {})[d] = int(g)
    qrels_jsonl = "".join(
        json.dumps({"query_id": q, "relevant": r}) + "\n" for q, r in grouped.items()
    ).encode()
    return {
        "run:trec": (".trec", trec),
        "run:ann": (".trec", _head(DEMO / "runs" / "ann_minilm.trec", 200)),
        "run:jsonl": (".jsonl", jsonl),
        "run:csv": (".csv", out.getvalue().encode()),
        "qrels:tsv": (".tsv", qrels_tsv),
        "qrels:trec": (".trec", qrels_trec),
        "qrels:jsonl": (".jsonl", qrels_jsonl),
        "queries:jsonl": (".jsonl", (DEMO / "queries.jsonl").read_bytes()),
        "corpus:jsonl": (".jsonl", _head(DEMO / "corpus.jsonl", 25)),
    }


SOURCES = _sources()
RUNS = sorted(k for k in SOURCES if k.startswith("run:"))
QRELS = sorted(k for k in SOURCES if k.startswith("qrels:"))
QRELS_FILE = DEMO / "qrels" / "test.tsv"
RUN_FILE = DEMO / "runs" / "ann_minilm.trec"

TOKENS = [
    b"\x00",
    b"\r",
    b"\r\n",
    b"\n",
    b"\t",
    b" ",
    b"99999999999999999999999",
    b"-99999999999999999999999",
    b"1" + b"0" * 400,
    b"9" * 5000,
    b"1e400",
    b"nan",
    b"-inf",
    b"\xff\xfe",
    b"\xc3",
    b"\xef\xbc\x99\xef\xbc\x99",  # full-width 99
    b'"',
    b"{",
    b"[" * 2000,
    b",",
    b"#",
    b"\xef\xbb\xbf",  # a BOM in the middle
    b"\x1f\x8b",  # a gzip magic number
]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.floats(0, 1, exclude_max=True), st.just(0)),
    st.tuples(st.just("duplicate_line"), st.floats(0, 1, exclude_max=True), st.integers(1, 3)),
    st.tuples(st.just("insert"), st.floats(0, 1, exclude_max=True), st.integers(0, len(TOKENS) - 1)),
    st.tuples(st.just("delete_line"), st.floats(0, 1, exclude_max=True), st.just(0)),
)


def mutate(data: bytes, mutations: list[tuple[str, float, int]]) -> bytes:
    for kind, where, arg in mutations:
        pos = int(where * len(data)) if data else 0
        if kind == "flip" and data:
            data = data[:pos] + bytes([data[pos] ^ arg]) + data[pos + 1 :]
        elif kind == "truncate":
            data = data[:pos]
        elif kind in ("duplicate_line", "delete_line"):
            lines = data.splitlines(keepends=True)
            if lines:
                i = int(where * len(lines))
                lines[i : i + 1] = [lines[i]] * (arg if kind == "duplicate_line" else 0)
                data = b"".join(lines)
        elif kind == "insert":
            data = data[:pos] + TOKENS[arg] + data[pos:]
    return data


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def _assert_clean_exit(code: int, err: str, data: bytes) -> None:
    assert code in (0, 2), f"exit {code} for {data[:300]!r}:\n{err}"
    assert "Traceback" not in err and "internal error" not in err, f"{data[:300]!r}:\n{err}"
    if code == 2:
        assert err.startswith("error: "), err


@contextlib.contextmanager
def _fast(on: bool):
    old = dio._FAST
    dio._FAST = on
    try:
        yield
    finally:
        dio._FAST = old


def _write(folder: str, suffix: str, data: bytes) -> str:
    path = Path(folder) / f"input{suffix}"
    path.write_bytes(data)
    return str(path)


@contextlib.contextmanager
def _mutated(source: str, mutations: list[tuple[str, float, int]], other_suffix: str | None, fast: bool):
    """A mutated copy of ``SOURCES[source]`` in a temporary folder, named with the source's suffix or
    ``other_suffix``, with the readers' fast paths on or off; yields (path, bytes)."""
    suffix, valid = SOURCES[source]
    data = mutate(valid, mutations)
    with tempfile.TemporaryDirectory() as d, _fast(fast):
        yield _write(d, other_suffix if other_suffix is not None else suffix, data), data


SUFFIXES = [".trec", ".jsonl", ".csv", ".tsv", ".txt", ".gz", ""]
SCALE = int(os.environ.get("FUZZ_SCALE", "1"))
OTHER_SUFFIX = st.none() | st.sampled_from(SUFFIXES)


def _fuzz(n: int) -> settings:
    return settings(max_examples=n * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])


FUZZ = _fuzz(40)


# the file mutated, the sources it is a mutation of, and the command line around it
CLI_CASES: dict[str, tuple[list[str], Callable[[str], list[str]]]] = {
    "run": (RUNS, lambda run: ["evaluate", "--qrels", str(QRELS_FILE), "--run", run, "--format", "json"]),
    "qrels": (QRELS, lambda qrels: ["evaluate", "--qrels", qrels, "--run", str(RUN_FILE)]),
}


@pytest.mark.parametrize("role", sorted(CLI_CASES))
@FUZZ
@given(
    draw=st.data(),
    mutations=st.lists(mutation, min_size=1, max_size=4),
    other_suffix=OTHER_SUFFIX,
    fast=st.booleans(),
)
def test_cli_evaluate_survives_mutated_files(role, draw, mutations, other_suffix, fast):
    sources, argv = CLI_CASES[role]
    source = draw.draw(st.sampled_from(sources), label="source")
    with _mutated(source, mutations, other_suffix, fast) as (path, data):
        code, err = _cli(argv(path))
    _assert_clean_exit(code, err, data)


READERS: dict[str, Callable] = {
    "run": dio.read_run,
    "qrels": dio.read_qrels,
    "queries": dio.read_queries,
    "corpus": dio.read_corpus,
}


@_fuzz(45)
@given(
    reader=st.sampled_from(sorted(READERS)),
    source=st.sampled_from(sorted(SOURCES)),
    mutations=st.lists(mutation, max_size=4),
    other_suffix=OTHER_SUFFIX,
    fast=st.booleans(),
)
def test_every_reader_survives_mutated_files(reader, source, mutations, other_suffix, fast):
    with _mutated(source, mutations, other_suffix, fast) as (path, _):
        try:
            READERS[reader](path)
        except DataError as e:
            assert "\n" not in str(e), str(e)
            assert "Fix:" in str(e) or "Expected" in str(e), str(e)


@_fuzz(30)
@given(
    data=st.binary(max_size=400),
    role=st.sampled_from(["run", "qrels", "queries", "corpus"]),
    suffix=st.sampled_from(SUFFIXES),
)
def test_random_bytes_in_any_role(data, role, suffix):
    with tempfile.TemporaryDirectory() as d:
        path = _write(d, suffix, data)
        paths = {
            "run": str(RUN_FILE),
            "qrels": str(QRELS_FILE),
            "queries": str(DEMO / "queries.jsonl"),
            "corpus": str(DEMO / "corpus.jsonl"),
        }
        paths[role] = path
        argv = ["evaluate", "--format", "json"]
        for r in ("qrels", "queries", "corpus", "run"):
            argv += [f"--{r}", paths[r]]
        code, err = _cli(argv)
    _assert_clean_exit(code, err, data)


@contextlib.contextmanager
def _mapped(on: bool):
    """Every run file memory-mapped (``read_mapped``'s threshold 0), or none."""
    old = dio.files.MAP_MIN_BYTES
    dio.files.MAP_MIN_BYTES = 0 if on else 2**62
    try:
        yield
    finally:
        dio.files.MAP_MIN_BYTES = old


def _outcome(path: str, mapped: bool) -> tuple:
    """What reading the run gives: its rows and the problems counted, or the error's message."""
    report = ValidationReport()
    with _mapped(mapped):
        try:
            run = dio.read_run(path, name="r", report=report)
        except DataError as e:
            return ("error", str(e))
    return ("run", run.df.to_dict("list"), [p.to_dict() for p in report.problems])


@_fuzz(40)
@given(
    source=st.sampled_from(RUNS),
    mutations=st.lists(mutation, max_size=4),
    other_suffix=OTHER_SUFFIX,
    fast=st.booleans(),
)
def test_a_mapped_run_reads_like_a_read_one(source, mutations, other_suffix, fast):
    """Parsing a run in place (a memory map) and from its bytes give the same rows, problems and errors."""
    with _mutated(source, mutations, other_suffix, fast) as (path, _):
        assert _outcome(path, mapped=True) == _outcome(path, mapped=False)
