"""The app opens on the user's data (issue 23 item 2): ``streamlit run app.py -- --data DIR --run FILE`` or
``DIAGNOSE_DATA`` / ``DIAGNOSE_RUNS``; the data folder becomes the data root; a run named at launch is read even
outside it; a mistake in the arguments is a message on the page. The parsing is tested on argument lists, the app
with AppTest (fake keyword encoder) on a copy of the demo."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import app_testing as app
import pytest

from diagnose.ui import sources
from diagnose.ui.launch import read_launch


def _folder(root: Path) -> Path:
    """A BEIR folder (the demo's three files) without runs/."""
    folder = root / "mydata"
    (folder / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        shutil.copyfile(app.DEMO / name, folder / name)
    return folder


# -- the arguments --------------------------------------------------------------------------------------------------


def test_the_command_line_names_the_folder_and_the_runs(tmp_path):
    folder = _folder(tmp_path)
    run = tmp_path / "elsewhere.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\n")
    got = read_launch(
        ["app.py", "--data", str(folder), "--run", f"mine={run}", "--retriever", "p=m:a"], env={}
    )
    assert (got.data, got.split, got.runs, got.error) == (
        str(folder.resolve()),
        "test",
        (("mine", str(run)),),
        None,
    )
    assert read_launch(["app.py", f"--data={folder}", "--split=dev"], env={}).split == "dev"


def test_the_environment_does_the_same_and_the_command_line_wins(tmp_path):
    folder = _folder(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\n")
    env = {"DIAGNOSE_DATA": str(folder), "DIAGNOSE_RUNS": f"{run};b={run}"}
    got = read_launch(["app.py"], env=env)
    assert got.data == str(folder.resolve()) and got.runs == (
        ("r", str(run)),
        ("b", str(run)),
    )  # r: the file name
    assert read_launch(["app.py", "--data", str(other)], env=env).data == str(other.resolve())


def test_another_programs_arguments_are_not_read(tmp_path):
    """Under pytest (or any program other than app.py) sys.argv is not the app's."""
    assert read_launch(["pytest", "--data", "nowhere"], env={}).data is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--data", "no/such/folder"], "is not a folder"),
        (["--data"], "--data needs a value"),
        (["--dta", "x"], "Unknown argument '--dta'"),
        (["--run", "r.trec"], "needs --data"),
        (["--data", ".", "--run", "no/such.trec"], "does not exist"),
    ],
)
def test_a_mistake_is_a_message_naming_it_and_the_usage(args, message):
    got = read_launch(["app.py", *args], env={})
    assert got.error is not None and message in got.error and got.data is None
    assert got.message().startswith(got.error) and "--data DIR" in got.message()


def test_the_data_folder_becomes_the_data_root_unless_the_root_is_set(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    monkeypatch.delenv("DIAGNOSE_DATA_ROOT", raising=False)
    monkeypatch.setenv("DIAGNOSE_DATA", str(folder))
    assert sources.data_root() == folder.resolve()
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(tmp_path))
    assert sources.data_root() == tmp_path.resolve()


# -- the app ---------------------------------------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("keyword_encoder")


def test_app_opens_on_the_data_given_on_the_command_line_with_a_run_outside_it(tmp_path, monkeypatch):
    """The run sits outside the data folder (the data root): named at launch, it is read; the demo is not loaded."""
    folder = _folder(tmp_path)
    run = tmp_path / "runs-elsewhere" / "mine.trec"
    run.parent.mkdir()
    shutil.copyfile(app.DEMO / "runs" / "ann_minilm.trec", run)
    monkeypatch.delenv("DIAGNOSE_DATA_ROOT", raising=False)
    monkeypatch.setattr(sys, "argv", ["app.py", "--data", str(folder), "--run", f"mine={run}"])
    at = app.demo_app()
    app.assert_clean(at)
    assert at.selectbox(key="src_kind").value == "launch"
    assert "mine" in at.selectbox(key="run").options[0]
    assert not any("ann_minilm" in o or "bm25_langchain" in o for o in at.selectbox(key="run").options)


def test_app_opens_on_the_data_given_through_the_environment(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    (folder / "runs").mkdir()
    shutil.copyfile(app.DEMO / "runs" / "bm25_langchain.trec", folder / "runs" / "lex.trec")
    monkeypatch.delenv("DIAGNOSE_DATA_ROOT", raising=False)
    monkeypatch.setenv("DIAGNOSE_DATA", str(folder))
    at = app.demo_app()
    app.assert_clean(at)
    assert at.selectbox(key="src_kind").value == "launch"
    assert [o for o in at.selectbox(key="run").options if o.startswith("lex")]


def test_app_shows_an_argument_mistake_on_the_page_and_opens_the_demo(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["app.py", "--data", "/no/such/folder"])
    at = app.demo_app()
    assert not at.exception, [e.message for e in at.exception]
    assert any(
        "is not a folder" in app.unescaped(e.value) and "--data DIR" in app.unescaped(e.value)
        for e in at.error
    )
    assert at.selectbox(key="src_kind").value == "demo"


def test_the_reads_allow_the_launch_folder_and_runs_and_nothing_beside_them(tmp_path, monkeypatch):
    """DIAGNOSE_DATA_ROOT elsewhere: the --data folder and the --run file are still read (the server's user chose
    them); a file beside the run is not."""
    folder = _folder(tmp_path)
    run = tmp_path / "runs-elsewhere" / "mine.trec"
    run.parent.mkdir()
    run.write_text("q1 Q0 d1 1 2.0 t\n")
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(tmp_path / "other-root"))
    monkeypatch.setattr(sys, "argv", ["app.py", "--data", str(folder), "--run", str(run)])
    roots = sources.read_roots(sources.launch_spec(read_launch()))
    assert folder.resolve() in roots and run.resolve() in roots
    beside = run.parent / "secret.trec"
    assert not any(beside.resolve().is_relative_to(r) for r in roots)
