"""Every malformed file in tests/bad_inputs: fatal ones stop with exit code 2 and a message naming the file and
the line; tolerated ones exit 0 with a counted warning naming the file and the line or the id.

Each file is read in its role next to small valid companions (tests/bad_inputs/companions: corpus d1..d5,
queries q1 q2, qrels q1->d1 q2->d3, a TREC run), through the library (``load_dataset``, what every command
calls) and through the CLI (``diagnose evaluate ... --format json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from diagnose.data import DataError
from diagnose.io import load_dataset

HERE = Path(__file__).resolve().parent / "bad_inputs"
COMP = HERE / "companions"


ROLES = ("corpus", "queries", "qrels", "run")  # a file's role is the start of its name: run_nan_score.trec
COMPANIONS = {
    "corpus": COMP / "corpus.jsonl",
    "queries": COMP / "queries.jsonl",
    "qrels": COMP / "qrels.tsv",
    "run": COMP / "run.trec",
}


@dataclass(frozen=True)
class Case:
    fatal: bool
    needles: tuple[str, ...]  # must all appear in the message (fatal) or in one warning of this file
    line: int | None = None  # fatal: the message places the file at "<file>:<line>:" (None: "<file>:")

    def expected(self, name: str) -> tuple[str, ...]:
        """The needles, a fatal message's place first."""
        if not self.fatal:
            return self.needles
        return (f"{name}:" if self.line is None else f"{name}:{self.line}:", *self.needles)


def fatal(line: int | None, *needles: str) -> Case:
    return Case(True, needles, line)


def warns(*needles: str) -> Case:
    return Case(False, needles)


CASES: dict[str, Case] = {
    # runs: fatal
    "run_five_columns.trec": fatal(3, "found 5", '"q1 Q0 d3 3 0.7"', "Fix:"),
    "run_nan_score.trec": fatal(2, "nan"),
    "run_inf_score.trec": fatal(4, "-inf"),
    "run_score_not_number.trec": fatal(2, "'high'"),
    "run_jsonl_missing_results.jsonl": fatal(2, '"results"', "docs"),
    "run_jsonl_bad_json_line2.jsonl": fatal(2, "invalid JSON"),
    "run_jsonl_nan_score.jsonl": fatal(2, "d3", "nan"),
    "run_jsonl_result_without_doc_id.jsonl": fatal(1, "#2"),
    "run_jsonl_mixed_scores.jsonl": fatal(1, "#2"),
    "run_jsonl_score_overflow.jsonl": fatal(2, "d3", "too large", "401 digits"),
    "run_csv_missing_doc_column.csv": fatal(1, "doc id", "document"),
    "run_csv_extra_field_line4.csv": fatal(4, "found 4"),
    "run_csv_bad_score.csv": fatal(3, "score"),
    "run_unknown_format.txt": fatal(1, "these are not", "TREC run"),
    # a golden set given as a run (either layout) is refused, saying what it looks like and where it belongs
    "run_beir_qrels.tsv": fatal(1, "looks like a qrels file", "--qrels"),
    "run_trec_qrels.trec": fatal(1, "looks like TREC qrels", "--qrels"),
    "run_golden_set_copy.csv": fatal(
        None, "is the golden set itself", "every metric would be 1.0", "--qrels"
    ),
    "run_gzip_corrupt.trec.gz": fatal(None, "gzip"),
    "run_utf16.trec": fatal(1, "UTF-16"),
    "run_fullwidth_score.trec": fatal(2, "'９９'", "non-ASCII"),
    "run_csv_fullwidth_score.csv": fatal(3, "'９９'", "non-ASCII"),
    "run_ids_collide_after_decoding.trec": fatal(None, "'q\ufffd2'", "lines 3 and 4", "UTF-8"),
    # runs that can only score 0: empty, or no query id in common with the golden queries
    "run_empty.trec": fatal(None, "'run' has no results", "every golden query"),
    "run_no_golden_query.trec": fatal(None, "none of the 2 query ids", "'x7'", "'q1'", "compared exactly"),
    "run_ids_differ_in_case.trec": fatal(None, "when case is ignored", "look like 'Q1'", "use 'q1'"),
    "run_ids_zero_padded.trec": fatal(None, "leading zeros", "look like 'q001'", "use 'q1'"),
    # runs: warnings
    "run_unjudged_long_id.trec": warns("1 query has no judgements", "is ignored", "(200 characters)"),
    "run_duplicate_docs.trec": warns("q1/d1"),
    "run_unknown_doc.trec": warns("q1/d99"),
    "run_missing_golden_query.trec": warns("q2"),
    "run_unjudged_query.trec": warns("q9"),
    "run_not_utf8.trec": warns("line 2"),
    "run_jsonl_repeated_query.jsonl": warns("q1 (lines 1 and 3)"),
    # qrels: fatal
    "qrels_grade_float.tsv": fatal(3, "'1.5'", "not an integer"),
    "qrels_grade_word.trec": fatal(2, "'high'"),
    "qrels_three_fields_line4.trec": fatal(4, "found 3"),
    "qrels_empty.tsv": fatal(None, "empty"),
    "qrels_header_only.tsv": fatal(None, "no judgements"),
    "qrels_jsonl_grade_float.jsonl": fatal(2, "'d3'", "0.5"),
    "qrels_jsonl_missing_relevant.jsonl": fatal(2, '"relevant"'),
    "qrels_unknown_format.txt": fatal(1, "q1,d1,1", "TREC qrels"),
    "qrels_grade_overflow.tsv": fatal(3, "out of range", "99999999999999999999999", "64-bit"),
    "qrels_grade_overflow.trec": fatal(2, "out of range", "99999999999999999999999", "64-bit"),
    "qrels_jsonl_grade_overflow.jsonl": fatal(2, "'d3'", "out of range", "64-bit"),
    "qrels_fullwidth_grade.tsv": fatal(3, "'２'", "non-ASCII"),
    # golden sets of reference contexts (diagnose/io/golden_sets.py)
    "qrels_golden_contexts_not_list.jsonl": fatal(2, "'q2'", "not a list of strings"),
    "qrels_golden_no_question.jsonl": fatal(1, "no question text"),
    "qrels_golden_examples_not_list.json": fatal(None, '"examples" is not a list', "save_json"),
    # qrels: warnings
    "qrels_unknown_doc.tsv": warns("q2/d42"),
    "qrels_duplicate_pair.tsv": warns("q1/d1"),
    "qrels_golden_unmatched.jsonl": warns("found in no document", "q2#0", "unmatched:"),
    "qrels_golden_ambiguous.jsonl": warns("several documents", "q1#0 in d1, d2, d3, d4, d5"),
    # corpus
    "corpus_duplicate_ids.jsonl": warns("d2"),
    "corpus_bad_json_line3.jsonl": warns("line 3"),
    "corpus_empty_document.jsonl": warns("d2"),
    "corpus_missing_id.jsonl": warns("line 2"),
    "corpus_not_utf8.jsonl": warns("line 2"),
    "corpus_csv_short_row.csv": warns("line 3"),
    "corpus_no_text_field.csv": fatal(None, "summary", "--text-field"),
    "corpus_unknown_format.txt": fatal(1, "just some prose"),
    "corpus_list_text.parquet": fatal(None, "'text'", "list", "row 1"),
    # queries
    "queries_struct_text.parquet": fatal(None, "'text'", "object", "row 1"),
    "queries_ids_collide_after_decoding.tsv": fatal(None, "'q\ufffd2'", "lines 3 and 4", "UTF-8"),
    "queries_not_utf8.tsv": warns("line 2"),
    "queries_no_tab.tsv": warns("line 2"),
    "queries_duplicate_ids.jsonl": warns("q1"),
    "queries_empty_text.jsonl": warns("q2"),
    "queries_missing_golden_query.tsv": warns("q2"),
}


def test_every_bad_input_has_a_case_and_vice_versa():
    files = {p.name for p in HERE.iterdir() if p.is_file()}
    assert files == set(CASES)
    assert len(CASES) >= 30
    assert {_role(name) for name in CASES} == set(ROLES)


def _role(name: str) -> str:
    return name.split("_")[0]


def _paths(name: str) -> dict[str, Path]:
    return {**COMPANIONS, _role(name): HERE / name}


def _matching_warning(problems: list[dict], name: str, needles: tuple[str, ...]) -> dict | None:
    for p in problems:
        if p["severity"] in ("warning", "error") and (p["file"] or "").endswith(name):
            text = p["message"] + " " + " ".join(p["examples"])
            if all(n in text for n in needles):
                return p
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_library(name: str):
    case = CASES[name]
    needles = case.expected(name)
    p = _paths(name)
    kwargs = dict(corpus=p["corpus"], queries=p["queries"], qrels=p["qrels"], runs=[("run", p["run"])])
    if case.fatal:
        with pytest.raises(DataError) as err:
            load_dataset(**kwargs)
        message = str(err.value)
        assert "\n" not in message, "a fatal message is one paragraph"
        for needle in needles:
            assert needle in message, message
        assert "Expected" in message and "Fix:" in message, message
    else:
        ds = load_dataset(**kwargs)
        found = _matching_warning([q.to_dict() for q in ds.report.problems], name, needles)
        assert found is not None, ds.report.format()


def _cli_available() -> bool:
    try:
        import diagnose.cli  # noqa: F401
        import diagnose.metrics  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _cli_available(), reason="diagnose.cli / diagnose.metrics not available yet")
@pytest.mark.parametrize("name", sorted(CASES))
def test_cli(name: str, capsys):
    from diagnose.cli import main

    case = CASES[name]
    needles = case.expected(name)
    p = _paths(name)
    code = main(
        [
            "evaluate",
            "--qrels",
            str(p["qrels"]),
            "--queries",
            str(p["queries"]),
            "--corpus",
            str(p["corpus"]),
            "--run",
            f"run={p['run']}",
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    if case.fatal:
        assert code == 2, err
        assert err.startswith("error: "), err
        for needle in needles:
            assert needle in err, err
    else:
        assert code == 0, err
        payload = json.loads(out)
        assert _matching_warning(payload["warnings"], name, needles) is not None, payload["warnings"]


# ---------------------------------------------------------------------------------------------- paths that are not
# plain readable files: created in tmp_path (a FIFO, a device, a socket, a name too long, a folder without access)


def _evaluate(capsys, **paths: Path | str) -> tuple[int, str]:
    """``diagnose evaluate`` on the companions, with ``paths`` (corpus/queries/qrels/run) replaced."""
    from diagnose.cli import main

    p: dict[str, Path | str] = {**COMPANIONS, **paths}
    argv = ["evaluate", "--format", "json"]
    for role in ("qrels", "queries", "corpus", "run"):
        argv += [f"--{role}", str(p[role])]
    code = main(argv)
    _, err = capsys.readouterr()
    return code, err


def _assert_refused(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.startswith("error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    assert "Fix:" in err, err


def _unblock_fifo_later(fifo: Path, every: float = 2.0, times: int = 30) -> None:
    """Open the FIFO for writing every ``every`` s, so a reader that opened it (the old bug) gets EOF, not a hang."""
    import os
    import threading
    import time

    def poke() -> None:
        for _ in range(times):
            time.sleep(every)
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # nobody is reading (or the FIFO is gone): nothing to unblock
                continue
            os.close(fd)

    threading.Thread(target=poke, daemon=True).start()


@pytest.mark.parametrize("role", ["run", "qrels", "corpus", "queries"])
def test_cli_refuses_a_fifo_instead_of_waiting_forever(tmp_path, capsys, role):
    import os

    fifo = tmp_path / f"{role}.fifo"
    os.mkfifo(fifo)
    _unblock_fifo_later(fifo)
    code, err = _evaluate(capsys, **{role: fifo})
    _assert_refused(code, err, str(fifo), "named pipe (FIFO)", "regular file")


@pytest.mark.parametrize("role", ["run", "qrels"])
def test_cli_refuses_a_device(capsys, role):
    # /dev/null, not /dev/zero: before the fix a device was read in-process (an empty run for /dev/null; /dev/zero
    # until memory ran out, see the subprocess test below)
    code, err = _evaluate(capsys, **{role: "/dev/null"})
    _assert_refused(code, err, "/dev/null", "device", "regular file")


def test_cli_dev_zero_under_a_memory_limit_is_exit_2_not_memory_error(tmp_path):
    import resource
    import subprocess
    import sys

    def limit() -> None:  # 3 GiB of address space: reading /dev/zero whole would raise MemoryError
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    script = (
        "import sys; from diagnose.cli import main; "
        f"sys.exit(main(['evaluate', '--qrels', {str(COMP / 'qrels.tsv')!r}, '--run', '/dev/zero']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, preexec_fn=limit
    )
    assert proc.returncode == 2, proc.stderr
    assert "/dev/zero" in proc.stderr and "device" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_refuses_a_socket(capsys):
    import socket
    import tempfile

    with tempfile.TemporaryDirectory(dir="/tmp") as d:  # AF_UNIX paths are limited to ~108 bytes
        path = Path(d) / "s.trec"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            code, err = _evaluate(capsys, run=path)
        finally:
            sock.close()
    _assert_refused(code, err, str(path), "socket")


@pytest.mark.parametrize("role", ["run", "qrels", "corpus", "queries"])
def test_cli_refuses_a_file_name_too_long(tmp_path, capsys, role):
    long = tmp_path / ("x" * 300 + ".trec")  # names are limited to 255 bytes: ENAMETOOLONG
    code, err = _evaluate(capsys, **{role: long})
    _assert_refused(code, err, "x" * 40, "too long", "305 characters", "shorter name")


def test_cli_refuses_a_run_name_too_long_with_equals(tmp_path, capsys):
    # NAME=PATH with an over-long argument: parse_run_arg's exists() used to raise OSError
    code, err = _evaluate(capsys, run="r=" + str(tmp_path / ("y" * 300 + ".trec")))
    _assert_refused(code, err, "too long")


def test_cli_refuses_a_data_folder_name_too_long(tmp_path, capsys):
    from diagnose.cli import main

    code = main(["evaluate", "--data", str(tmp_path / ("z" * 300)), "--run", str(COMP / "run.trec")])
    _, err = capsys.readouterr()
    _assert_refused(code, err, "too long")


def _deny_under(monkeypatch, folder: Path) -> None:
    """Make every stat/open below ``folder`` fail with EACCES, as for a folder without search (x) permission.

    (The tests run as root here, where chmod does not deny anything; test_cli_permission_denied_for_real does
    the same with chmod when not root.)
    """
    import builtins
    import errno
    import io as stdio
    import os

    prefix = str(folder) + os.sep

    def denied(path) -> bool:
        return isinstance(path, str | os.PathLike) and os.fspath(path).startswith(prefix)

    def raise_for(path):
        raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))

    real_stat, real_open, real_os_open = os.stat, builtins.open, os.open
    real_scandir = os.scandir

    def stat(path, *args, **kwargs):
        return raise_for(path) if denied(path) else real_stat(path, *args, **kwargs)

    def open_(path, *args, **kwargs):
        return raise_for(path) if denied(path) else real_open(path, *args, **kwargs)

    def os_open(path, *args, **kwargs):
        return raise_for(path) if denied(path) else real_os_open(path, *args, **kwargs)

    def scandir(path=".", *args, **kwargs):
        return (
            raise_for(path)
            if denied(os.path.join(os.fspath(path), ""))
            else real_scandir(path, *args, **kwargs)
        )

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(stdio, "open", open_)
    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(os, "scandir", scandir)


@pytest.mark.parametrize("role", ["run", "qrels", "corpus", "queries"])
def test_cli_permission_denied_names_the_path_and_the_fix(tmp_path, capsys, monkeypatch, role):
    import shutil

    locked = tmp_path / "locked"
    locked.mkdir()
    name = {"run": "run.trec", "qrels": "qrels.tsv", "corpus": "corpus.jsonl", "queries": "queries.jsonl"}[
        role
    ]
    shutil.copy(COMP / name, locked / name)
    _deny_under(monkeypatch, locked)
    code, err = _evaluate(capsys, **{role: locked / name})
    _assert_refused(code, err, str(locked / name), "permission denied", "chmod")


def test_cli_permission_denied_in_a_corpus_folder(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "docs"
    (folder / "locked").mkdir(parents=True)
    for i in range(1, 6):
        (folder / f"d{i}.txt").write_text(f"document {i}")
    (folder / "locked" / "d6.txt").write_text("document 6")
    _deny_under(monkeypatch, folder / "locked")
    code, err = _evaluate(capsys, corpus=folder)
    _assert_refused(code, err, "locked", "permission denied")


def test_cli_permission_denied_on_a_data_folder(tmp_path, capsys, monkeypatch):
    from diagnose.cli import main

    (tmp_path / "locked" / "beir").mkdir(parents=True)
    _deny_under(monkeypatch, tmp_path / "locked")
    code = main(["evaluate", "--data", str(tmp_path / "locked" / "beir"), "--run", str(COMP / "run.trec")])
    _, err = capsys.readouterr()
    _assert_refused(code, err, "locked", "permission denied")


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0, reason="root"
)
def test_cli_permission_denied_for_real(tmp_path, capsys):
    import shutil

    locked = tmp_path / "locked"
    locked.mkdir()
    shutil.copy(COMP / "run.trec", locked / "run.trec")
    locked.chmod(0o600)  # no search permission: stat of the file inside fails with EACCES
    try:
        code, err = _evaluate(capsys, run=locked / "run.trec")
    finally:
        locked.chmod(0o700)
    _assert_refused(code, err, "permission denied")


def test_cli_refuses_a_file_over_the_size_limit(tmp_path, capsys, monkeypatch):
    run = tmp_path / "big.trec"
    run.write_bytes((COMP / "run.trec").read_bytes() * 20)  # 1,600 bytes; every companion is under 1,000
    monkeypatch.setenv("DIAGNOSE_MAX_INPUT_BYTES", "1000")
    code, err = _evaluate(capsys, run=run)
    _assert_refused(code, err, "big.trec", "1600 bytes", "DIAGNOSE_MAX_INPUT_BYTES")


def test_cli_refuses_a_gzip_that_decompresses_over_the_limit(tmp_path, capsys, monkeypatch):
    import gzip

    run = tmp_path / "run.trec.gz"
    run.write_bytes(gzip.compress((COMP / "run.trec").read_bytes() * 20))  # 1,600 bytes, ~100 compressed
    monkeypatch.setenv("DIAGNOSE_MAX_INPUT_BYTES", "1000")
    code, err = _evaluate(capsys, run=run)
    _assert_refused(code, err, "run.trec.gz", "decompress", "DIAGNOSE_MAX_INPUT_BYTES")


def test_cli_rejects_a_bad_size_limit(capsys, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_MAX_INPUT_BYTES", "lots")
    code, err = _evaluate(capsys)
    _assert_refused(code, err, "DIAGNOSE_MAX_INPUT_BYTES", "'lots'")
