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


@dataclass(frozen=True)
class Case:
    role: str  # corpus | queries | qrels | run
    fatal: bool
    needles: tuple[str, ...]  # must all appear in the message (fatal) or in one warning of this file


F, W = True, False
CASES: dict[str, Case] = {
    # runs: fatal
    "run_five_columns.trec": Case(
        "run", F, ("run_five_columns.trec:3:", "found 5", '"q1 Q0 d3 3 0.7"', "Fix:")
    ),
    "run_nan_score.trec": Case("run", F, ("run_nan_score.trec:2:", "nan")),
    "run_inf_score.trec": Case("run", F, ("run_inf_score.trec:4:", "-inf")),
    "run_score_not_number.trec": Case("run", F, ("run_score_not_number.trec:2:", "'high'")),
    "run_jsonl_missing_results.jsonl": Case(
        "run", F, ("run_jsonl_missing_results.jsonl:2:", '"results"', "docs")
    ),
    "run_jsonl_bad_json_line2.jsonl": Case("run", F, ("run_jsonl_bad_json_line2.jsonl:2:", "invalid JSON")),
    "run_jsonl_nan_score.jsonl": Case("run", F, ("run_jsonl_nan_score.jsonl:2:", "d3", "nan")),
    "run_jsonl_result_without_doc_id.jsonl": Case(
        "run", F, ("run_jsonl_result_without_doc_id.jsonl:1:", "#2")
    ),
    "run_jsonl_mixed_scores.jsonl": Case("run", F, ("run_jsonl_mixed_scores.jsonl:1:", "#2")),
    "run_jsonl_score_overflow.jsonl": Case(
        "run", F, ("run_jsonl_score_overflow.jsonl:2:", "d3", "too large", "401 digits")
    ),
    "run_csv_missing_doc_column.csv": Case(
        "run", F, ("run_csv_missing_doc_column.csv:1:", "doc id", "document")
    ),
    "run_csv_extra_field_line4.csv": Case("run", F, ("run_csv_extra_field_line4.csv:4:", "found 4")),
    "run_csv_bad_score.csv": Case("run", F, ("run_csv_bad_score.csv:3:", "score")),
    "run_unknown_format.txt": Case("run", F, ("run_unknown_format.txt:1:", "these are not", "TREC run")),
    "run_gzip_corrupt.trec.gz": Case("run", F, ("run_gzip_corrupt.trec.gz:", "gzip")),
    "run_utf16.trec": Case("run", F, ("run_utf16.trec:1:", "UTF-16")),
    # runs: warnings
    "run_duplicate_docs.trec": Case("run", W, ("q1/d1",)),
    "run_empty.trec": Case("run", W, ("empty",)),
    "run_unknown_doc.trec": Case("run", W, ("q1/d99",)),
    "run_missing_golden_query.trec": Case("run", W, ("q2",)),
    "run_unjudged_query.trec": Case("run", W, ("q9",)),
    "run_not_utf8.trec": Case("run", W, ("line 2",)),
    "run_jsonl_repeated_query.jsonl": Case("run", W, ("q1 (lines 1 and 3)",)),
    # qrels: fatal
    "qrels_grade_float.tsv": Case("qrels", F, ("qrels_grade_float.tsv:3:", "'1.5'", "not an integer")),
    "qrels_grade_word.trec": Case("qrels", F, ("qrels_grade_word.trec:2:", "'high'")),
    "qrels_three_fields_line4.trec": Case("qrels", F, ("qrels_three_fields_line4.trec:4:", "found 3")),
    "qrels_empty.tsv": Case("qrels", F, ("qrels_empty.tsv:", "empty")),
    "qrels_header_only.tsv": Case("qrels", F, ("qrels_header_only.tsv:", "no judgements")),
    "qrels_jsonl_grade_float.jsonl": Case("qrels", F, ("qrels_jsonl_grade_float.jsonl:2:", "'d3'", "0.5")),
    "qrels_jsonl_missing_relevant.jsonl": Case(
        "qrels", F, ("qrels_jsonl_missing_relevant.jsonl:2:", '"relevant"')
    ),
    "qrels_unknown_format.txt": Case("qrels", F, ("qrels_unknown_format.txt:1:", "q1,d1,1", "TREC qrels")),
    "qrels_grade_overflow.tsv": Case(
        "qrels", F, ("qrels_grade_overflow.tsv:3:", "out of range", "99999999999999999999999", "64-bit")
    ),
    "qrels_grade_overflow.trec": Case(
        "qrels", F, ("qrels_grade_overflow.trec:2:", "out of range", "99999999999999999999999", "64-bit")
    ),
    "qrels_jsonl_grade_overflow.jsonl": Case(
        "qrels", F, ("qrels_jsonl_grade_overflow.jsonl:2:", "'d3'", "out of range", "64-bit")
    ),
    # qrels: warnings
    "qrels_unknown_doc.tsv": Case("qrels", W, ("q2/d42",)),
    "qrels_duplicate_pair.tsv": Case("qrels", W, ("q1/d1",)),
    # corpus
    "corpus_duplicate_ids.jsonl": Case("corpus", W, ("d2",)),
    "corpus_bad_json_line3.jsonl": Case("corpus", W, ("line 3",)),
    "corpus_empty_document.jsonl": Case("corpus", W, ("d2",)),
    "corpus_missing_id.jsonl": Case("corpus", W, ("line 2",)),
    "corpus_not_utf8.jsonl": Case("corpus", W, ("line 2",)),
    "corpus_csv_short_row.csv": Case("corpus", W, ("line 3",)),
    "corpus_no_text_field.csv": Case("corpus", F, ("corpus_no_text_field.csv:", "summary", "--text-field")),
    "corpus_unknown_format.txt": Case("corpus", F, ("corpus_unknown_format.txt:1:", "just some prose")),
    # queries
    "queries_not_utf8.tsv": Case("queries", W, ("line 2",)),
    "queries_no_tab.tsv": Case("queries", W, ("line 2",)),
    "queries_duplicate_ids.jsonl": Case("queries", W, ("q1",)),
    "queries_empty_text.jsonl": Case("queries", W, ("q2",)),
    "queries_missing_golden_query.tsv": Case("queries", W, ("q2",)),
}


def test_every_bad_input_has_a_case_and_vice_versa():
    files = {p.name for p in HERE.iterdir() if p.is_file()}
    assert files == set(CASES)
    assert len(CASES) >= 30


def _paths(name: str) -> dict[str, Path]:
    paths = {
        "corpus": COMP / "corpus.jsonl",
        "queries": COMP / "queries.jsonl",
        "qrels": COMP / "qrels.tsv",
        "run": COMP / "run.trec",
    }
    paths[CASES[name].role] = HERE / name
    return paths


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
    p = _paths(name)
    kwargs = dict(corpus=p["corpus"], queries=p["queries"], qrels=p["qrels"], runs=[("run", p["run"])])
    if case.fatal:
        with pytest.raises(DataError) as err:
            load_dataset(**kwargs)
        message = str(err.value)
        assert "\n" not in message, "a fatal message is one paragraph"
        for needle in case.needles:
            assert needle in message, message
        assert "Expected" in message and "Fix:" in message, message
    else:
        ds = load_dataset(**kwargs)
        found = _matching_warning([q.to_dict() for q in ds.report.problems], name, case.needles)
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
        for needle in case.needles:
            assert needle in err, err
    else:
        assert code == 0, err
        payload = json.loads(out)
        assert _matching_warning(payload["warnings"], name, case.needles) is not None, payload["warnings"]
