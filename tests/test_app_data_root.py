"""The app's data root holds on every file read (issue 22): a symbolic link inside the root is followed only when its
target is inside it too, whether the link is a BEIR folder's file, a run in its ``runs/`` folder or a file of a
corpus folder; the content of a refused file never reaches a message. The library side (:func:`confine_reads`) is
tested directly, the app with AppTest on a copy of the demo and the fake keyword encoder."""

from __future__ import annotations

import shutil
from pathlib import Path

import app_testing as app
import pytest

import diagnose.io.files as files
from diagnose.data import DataError
from diagnose.io import confine_reads, read_corpus, read_run
from diagnose.io.files import _READ_ROOTS

SECRET = "SECRET-7f3a9c-do-not-show"
RUN = "q1 Q0 d1 1 2.0 t\n"


@pytest.fixture
def confined(tmp_path):
    """A data root (``tmp_path / "root"``), reads confined to it for the test, and a file outside it."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.trec"
    outside.write_text(f"{SECRET} is not a run line\n")
    token = confine_reads(root)
    yield root, outside
    _READ_ROOTS.reset(token)


# -- the library: confine_reads --------------------------------------------------------------------------------------


def test_a_link_inside_the_root_to_a_file_outside_it_is_refused_by_name(confined):
    root, outside = confined
    (root / "run.trec").symlink_to(outside)
    with pytest.raises(
        DataError,
        match=r"run\.trec: resolves \(through a symbolic link or '\.\.'\) to a file "
        r"outside the data folder",
    ) as e:
        read_run(root / "run.trec")
    assert SECRET not in str(e.value)
    with pytest.raises(DataError, match="outside the data folder"):
        read_run(root / ".." / "outside.trec")  # '..' is resolved too


def test_a_link_inside_the_root_to_a_file_inside_it_is_followed(confined):
    root, _ = confined
    (root / "store").mkdir()
    (root / "store" / "real.trec").write_text(RUN)
    (root / "run.trec").symlink_to(root / "store" / "real.trec")
    assert list(read_run(root / "run.trec").df["doc_id"]) == ["d1"]


def test_a_corpus_folder_file_linking_out_of_the_root_is_refused(confined):
    root, outside = confined
    (root / "docs").mkdir()
    (root / "docs" / "a.txt").write_text("a document")
    (root / "docs" / "b.txt").symlink_to(outside)
    with pytest.raises(DataError, match=r"b\.txt: resolves .* outside the data folder") as e:
        read_corpus(root / "docs")
    assert SECRET not in str(e.value)


def test_a_link_swapped_in_after_the_check_is_caught_on_the_opened_file(confined, monkeypatch):
    """The race: the path checks out, then a link to a file outside the root replaces it before the open. The
    opened file itself (``/proc/self/fd``) is checked again."""
    root, outside = confined
    (root / "run.trec").write_text(RUN)
    check = files.check_input_path

    def check_then_swap(path, expected, **kwargs):
        st = check(path, expected, **kwargs)
        (root / "run.trec").unlink()
        (root / "run.trec").symlink_to(outside)
        return st

    monkeypatch.setattr(files, "check_input_path", check_then_swap)
    with pytest.raises(DataError, match="outside the data folder") as e:
        read_run(root / "run.trec")
    assert SECRET not in str(e.value)


def test_reads_are_free_again_once_the_confinement_is_reset(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(RUN)
    token = confine_reads(tmp_path / "elsewhere")
    try:
        with pytest.raises(DataError, match="outside the data folder"):
            read_run(path)
    finally:
        _READ_ROOTS.reset(token)
    assert len(read_run(path).df) == 1


# -- the app ---------------------------------------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("keyword_encoder")


def _shown(at) -> str:
    """Every text the page shows the user."""
    parts = [
        x.value
        for kind in ("error", "warning", "info", "success", "markdown", "caption", "code", "text")
        for x in getattr(at, kind)
    ]
    parts += [str(x.value) for x in at.exception]
    return app.unescaped(" ".join(str(p) for p in parts))


def _beir_copy(root: Path) -> Path:
    folder = root / "beir"
    folder.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        shutil.copyfile(app.DEMO / name, folder / name)
    (folder / "qrels").mkdir()
    shutil.copyfile(app.DEMO / "qrels" / "test.tsv", folder / "qrels" / "test.tsv")
    (folder / "runs").mkdir()
    shutil.copyfile(app.DEMO / "runs" / "ann_minilm.trec", folder / "runs" / "ann_minilm.trec")
    return folder


def _open_beir(folder: Path):
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("beir").run()
    at.text_input(key="beir_dir").input(str(folder)).run()
    return at


def test_app_a_beir_corpus_linking_out_of_the_root_is_refused_without_its_content(tmp_path, monkeypatch):
    """Before: the folder was checked, its files were not: the linked file was read, and the reader's message
    quoted its first line (the secret) on the page."""
    root = tmp_path / "root"
    root.mkdir()
    folder = _beir_copy(root)
    (tmp_path / "secret.jsonl").write_text(f"{SECRET}\n")
    (folder / "corpus.jsonl").unlink()
    (folder / "corpus.jsonl").symlink_to(tmp_path / "secret.jsonl")
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(root))
    at = _open_beir(folder)
    assert not at.exception
    shown = _shown(at)
    assert "corpus.jsonl" in shown and "outside the data folder" in shown
    assert SECRET not in shown


def test_app_a_run_linking_to_the_server_environment_is_refused_without_its_content(tmp_path, monkeypatch):
    """Before: ``runs/env.trec -> /proc/self/environ`` was read as a run and the start of the server's environment
    was shown in the reader's message."""
    root = tmp_path / "root"
    root.mkdir()
    folder = _beir_copy(root)
    (folder / "runs" / "env.trec").symlink_to("/proc/self/environ")
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(root))
    at = _open_beir(folder)
    assert not at.exception
    shown = _shown(at)
    assert "env.trec" in shown and "outside the data folder" in shown
    environ = Path("/proc/self/environ").read_bytes().decode("utf-8", "replace").split("\0")
    leaked = [v for v in environ if len(v) >= 8 and v in shown]
    assert not leaked


def test_app_links_inside_the_root_are_followed(tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    folder = _beir_copy(root)
    (root / "store").mkdir()
    (folder / "corpus.jsonl").rename(root / "store" / "corpus.jsonl")
    (folder / "corpus.jsonl").symlink_to(root / "store" / "corpus.jsonl")
    (folder / "runs" / "prod.trec").symlink_to(folder / "runs" / "ann_minilm.trec")
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(root))
    at = _open_beir(folder)
    app.assert_clean(at)
    assert sorted(app.frame_with(at, "run")["run"]) == sorted(["ann_minilm", "prod", *app.BASELINES])
