"""The Streamlit app's Judge page, with AppTest on the demo corpus and the fake keyword encoder: every grade
appended to the journal, resuming, and building a golden set from nothing.

How these tests work (the fake keyword encoder, expected values from the demo files): tests/app_testing.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import app_testing as app
import pytest
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.usefixtures("keyword_encoder")


def _judge(tmp_path, monkeypatch) -> tuple[AppTest, Path]:
    journal = tmp_path / "journal" / "judgements.jsonl"
    monkeypatch.setenv("DIAGNOSE_JOURNAL", str(journal))
    monkeypatch.setenv("DIAGNOSE_FOREGROUND_SECONDS", "120")  # wait for the vectors (background encoding)
    return app.open_demo("judge"), journal


def _current_pair(at: AppTest) -> tuple[str, str]:
    """The (query id, doc id) the page shows: its "Query ..." and "Document ..." headings."""
    heads = [m.value for m in at.markdown if m.value.startswith("##### ")]
    q = next(h for h in heads if h.startswith("##### Query "))
    d = next(h for h in heads if h.startswith("##### Document "))
    return app.unescaped(q.removeprefix("##### Query ")), app.unescaped(d.removeprefix("##### Document "))


def test_judge_page_appends_every_grade_to_the_journal_and_resumes(tmp_path, monkeypatch):
    from diagnose.judging import Journal

    at, journal = _judge(tmp_path, monkeypatch)
    assert at.title[0].value == "Judge"
    assert [b.label for b in at.button if b.key and b.key.startswith("judge_")] == [
        "0 · not relevant",
        "1 · related",
        "2 · relevant",
        "3 · highly relevant",
        "Skip",
    ]
    first = _current_pair(at)
    # the demo's planted near-duplicates come first: the reason says so
    assert any("near\\-duplicate of relevant" in m.value for m in at.markdown if m.value.startswith("**Why"))
    at.button(key="judge_2").click().run()
    app.assert_clean(at)
    second = _current_pair(at)
    assert second != first
    at.button(key="judge_skip").click().run()
    app.assert_clean(at)
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [(x["query_id"], x["doc_id"], x["grade"]) for x in lines] == [(*first, 2), (*second, "skip")]
    # the effect of the one graded judgement, per run
    assert any("after 1 judgement" in m.value for m in at.markdown)

    # reopening (a new session) resumes at the first pair not judged yet
    again = app.open_demo("judge")
    third = _current_pair(again)
    assert third not in (first, second)
    assert Journal(journal).judgements() == {first: 2, second: "skip"}
    assert any(s.value.startswith("Pair 3 of") for s in again.subheader)
    again.button(key="judge_0").click().run()
    assert Journal(journal).judgements()[third] == 0


def test_starting_with_no_golden_set_builds_one_on_the_judge_page(tmp_path, monkeypatch):
    """A production query log and a corpus, no qrels: the pages that need a golden set say how to start one, the
    Judge page pools candidates (BM25, dense, hybrid) for every query and records grades."""
    from diagnose.judging import Journal

    journal = tmp_path / "journal" / "judgements.jsonl"
    monkeypatch.setenv("DIAGNOSE_JOURNAL", str(journal))
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("files").run()
    at.text_input(key="f_corpus").input(str(app.DEMO / "corpus.jsonl"))
    at.text_input(key="f_queries").input(str(app.DEMO / "queries.jsonl")).run()
    assert not at.exception
    assert any("no golden set yet" in i.value for i in at.info)
    at.switch_page(app.PAGES.format("judge")).run()
    app.assert_clean(at)
    assert at.title[0].value == "Judge"
    query, doc = _current_pair(at)
    next(b for b in at.button if b.key == "judge_2").click().run()
    app.assert_clean(at)
    assert Journal(journal).judgements() == {(query, doc): 2}


def test_a_corrupt_journal_is_a_message_on_the_judge_page(tmp_path, monkeypatch):
    """A hand-edited journal line nested 100,000 levels deep (on 8fa1f16: RecursionError, a traceback)."""
    at, journal = _judge(tmp_path, monkeypatch)  # the page runs once with an empty journal
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_bytes(
        b'{"query_id": "q1", "doc_id": "d1", "grade": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    )
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    [error] = at.error
    assert "The journal cannot be read" in app.unescaped(error.value)
    assert "line 1: the line is JSON nested deeper than 16 levels" in app.unescaped(error.value)
    assert not [b for b in at.button if b.key and b.key.startswith("judge_")]  # judging paused


def test_a_journal_that_cannot_be_written_is_a_message_on_the_judge_page(tmp_path, monkeypatch):
    """The journal's folder is a file, as good as read-only (as root, chmod does not stop a write): the click says
    the judgement was not saved (on 8fa1f16: FileExistsError in the button's callback, a traceback)."""
    (tmp_path / "blocked").write_text("a file, not a folder")
    monkeypatch.setenv("DIAGNOSE_JOURNAL", str(tmp_path / "blocked" / "judgements.jsonl"))
    monkeypatch.setenv("DIAGNOSE_FOREGROUND_SECONDS", "120")
    at = app.open_demo("judge")
    app.assert_clean(at)
    pair = _current_pair(at)
    at.button(key="judge_2").click().run()
    assert not at.exception, [e.message for e in at.exception]
    [error] = at.error
    assert "cannot write the journal" in app.unescaped(error.value)
    assert f"{pair[0]} / {pair[1]} = 2 was not saved" in app.unescaped(error.value)
    assert _current_pair(at) == pair  # still the same pair to judge
