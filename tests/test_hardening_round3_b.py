"""Hardening, round 3 (issue 38), the second half: JSON outputs carry the warnings their table prints; ANN and
chunking parameters a C++ library or the splitter would crash on are refused; metadata filter files; fine-tuning
leakage and ``--sample``; the app's own model and uploads; Python API parameters; memory-mapped runs.

Each test was written to fail on main 95070d1. The data set of the JSON tests is a copy of the demo with one empty
document added and one run line naming a document the corpus lacks: the two warnings the table format prints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from diagnose.cli import EXIT_OK, main
from diagnose.embed import KeywordEncoder

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
RUN = DEMO / "runs" / "ann_minilm.trec"
WARNED = {"empty_document", "run_doc_not_in_corpus"}


@pytest.fixture
def warned(tmp_path, monkeypatch):
    """A demo copy with an empty document and a run line whose document is not in the corpus; the fake encoder."""
    monkeypatch.setattr("diagnose.embed.load_encoder", lambda *a, **kw: KeywordEncoder())
    data = tmp_path / "data"
    (data / "qrels").mkdir(parents=True)
    shutil.copy(DEMO / "queries.jsonl", data / "queries.jsonl")
    shutil.copy(DEMO / "qrels" / "test.tsv", data / "qrels" / "test.tsv")
    corpus = (DEMO / "corpus.jsonl").read_text(encoding="utf-8")
    (data / "corpus.jsonl").write_text(corpus + json.dumps({"_id": "empty-1", "text": ""}) + "\n", "utf-8")
    runs = []
    for name in ("a", "b"):
        run = tmp_path / f"{name}.trec"
        run.write_text(RUN.read_text() + f"q001 Q0 ghost-doc 99 0.01 {name}\n", encoding="utf-8")
        runs.append(str(run))
    return data, runs


def _json_warnings(capsys, argv: list[str]) -> set[str]:
    """The warning codes of a command's JSON output; its table run's standard error names the same problems."""
    assert main([*argv, "--format", "json"]) == EXIT_OK
    out = capsys.readouterr()
    payload = json.loads(out.out)
    assert out.err.count("warning:") == 0  # JSON mode prints them in the payload, not on standard error
    return {w["code"] for w in payload["warnings"]}


@pytest.mark.parametrize(
    "command",
    [
        ["chunking", "--sizes", "64", "--overlaps", "0"],
        ["ann"],
        ["risk"],
        ["fuse", "--run", "{b}"],
        ["models"],
    ],
    ids=["chunking", "ann", "risk", "fuse", "models"],
)
def test_json_outputs_carry_the_warnings_the_table_prints(warned, capsys, command):
    data, (a, b) = warned
    argv = [command[0], "--data", str(data), *(x.format(b=b) for x in command[1:])]
    if command[0] != "models":
        argv += ["--run", a]
    assert main(argv) == EXIT_OK
    err = capsys.readouterr().err
    printed = {"empty_document"} | ({"run_doc_not_in_corpus"} if "not in the corpus" in err else set())
    assert "has no text and no title" in err  # the table format prints the empty document's warning
    codes = _json_warnings(capsys, argv)
    assert codes == printed
    if command[0] != "models":  # a run was given: its ghost document is named in both formats
        assert codes == WARNED


def test_rerank_json_carries_the_warnings(warned, capsys):
    data, (a, b) = warned
    argv = ["rerank", "--data", str(data), "--candidates", a, "--reranked", b]
    assert "empty_document" in _json_warnings(capsys, argv)
