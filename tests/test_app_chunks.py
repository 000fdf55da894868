"""The app over a chunk corpus, with AppTest and the fake keyword encoder: the sidebar's "Parent document field"
(the ``parent_field=`` of ``diagnose.load``), the chunk / document level of the metrics on the Overview and the
Compare page, and the span-based context columns of a golden set of reference contexts.

The data: the demo cut into chunks of at most 300 characters at spaces (ids ``c1``, ``c2``, ... that no id pattern
recognises, the document under the metadata key ``parent``, offsets under ``start_index``), the demo's queries and
document qrels, and each demo run with every document replaced by its chunks in a row (the first chunk where the
document was), so the document level must give the demo's own document metrics, computed here by
``diagnose.evaluate`` on the demo files (tests/test_chunks.py proves the equality in the library).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import app_testing as app
import pytest
from golden_testing import golden_examples

import diagnose
from diagnose.cli import main

pytestmark = pytest.mark.usefixtures("keyword_encoder")

RUNS = {"ann": "ann_minilm", "bm25l": "bm25_langchain"}


def _cut(text: str, size: int = 300) -> list[tuple[int, str]]:
    """``text`` cut after a space into pieces of at most ``size`` characters that tile it: ``(start, piece)``."""
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = text.rfind(" ", start + 1, end)
            end = space + 1 if space > start else end
        out.append((start, text[start:end]))
        start = end
    return out


def _chunked_demo(root: Path) -> dict[str, Path]:
    """The files of the module docstring under ``root``; returns them by role."""
    rows, chunks_of, n = [], {}, 0
    for line in (app.DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for start, piece in _cut(doc["text"]):
            n += 1
            meta = {"parent": doc["_id"], "start_index": start}
            rows.append({"_id": f"c{n}", "title": doc["title"], "text": piece, "metadata": meta})
            chunks_of.setdefault(doc["_id"], []).append(f"c{n}")
    files = {"corpus": root / "chunks.jsonl", "queries": root / "queries.jsonl", "qrels": root / "qrels.tsv"}
    files["corpus"].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    shutil.copy(app.DEMO / "queries.jsonl", files["queries"])
    shutil.copy(app.DEMO / "qrels" / "test.tsv", files["qrels"])
    for name, demo_run in RUNS.items():
        run = diagnose.load(app.DEMO, runs=[app.DEMO / "runs" / f"{demo_run}.trec"]).runs[demo_run]
        lines = []
        for q, items in run.df.sort_values(["query_id", "rank"]).groupby("query_id", sort=False):
            chunks = [c for d in items["doc_id"] for c in chunks_of.get(d, [d])]
            lines += [f"{q} Q0 {c} {r} {-r} {name}\n" for r, c in enumerate(chunks, start=1)]
        files[name] = root / f"{name}.trec"
        files[name].write_text("".join(lines), encoding="utf-8")
    return files


@pytest.fixture
def chunked(tmp_path, monkeypatch) -> dict[str, Path]:
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(tmp_path))
    return _chunked_demo(tmp_path)


def _open_files(files: dict[str, Path], parent: str = "", qrels: Path | None = None):
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("files").run()
    at.text_input(key="f_corpus").input(str(files["corpus"]))
    at.text_input(key="f_queries").input(str(files["queries"]))
    at.text_input(key="f_qrels").input(str(qrels or files["qrels"]))
    at.text_area(key="f_runs").input("\n".join(f"{n}={files[n]}" for n in RUNS))
    at.text_input(key="parent_field").input(parent).run()
    app.assert_clean(at)
    return at


def _document_metrics(metric: str) -> dict[str, float]:
    """``metric`` of the demo runs over the demo's documents: what the document level must show."""
    ds = diagnose.load(app.DEMO)
    runs = {n: app.DEMO / "runs" / f"{d}.trec" for n, d in RUNS.items()}
    table = diagnose.evaluate(ds, runs, metrics=[metric])
    return {n: float(table.loc[n, metric]) for n in runs}


def _levels(at) -> list:
    return [r for r in at.radio if r.key == "metrics_level"]


def _no_none(frame) -> None:
    text = frame.astype(str)
    assert not text.isin(["None", "nan"]).any().any(), frame


def test_the_parent_field_box_reads_a_chunk_corpus_and_the_overview_shows_both_levels(chunked):
    at = _open_files(chunked)
    # ids cN follow no pattern: without the box the corpus is read as documents, and there is no level to choose
    assert at.session_state["_bundle"].analysis.chunks is None and not _levels(at)
    at.text_input(key="parent_field").input("parent").run()
    app.assert_clean(at)
    cmap = at.session_state["_bundle"].analysis.chunks
    assert cmap is not None and "parent" in cmap.how and cmap.offsets == "start_index"
    n_docs = len((app.DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines())
    assert any(f"chunks of {n_docs:,} documents" in c.value for c in at.caption)  # the findings come first
    want = _document_metrics("ndcg@10")
    chunk_level = app.frame_with(at, "run").set_index("run")
    _no_none(chunk_level)
    # the demo's judgements name documents: every chunk of a relevant document is relevant at the chunk level, a
    # different measure from the document level's
    assert chunk_level.loc["ann", "ndcg@10"] != pytest.approx(want["ann"])
    _levels(at)[0].set_value("document").run()
    app.assert_clean(at)
    document_level = app.frame_with(at, "run").set_index("run")
    _no_none(document_level)
    for name, value in want.items():
        assert document_level.loc[name, "ndcg@10"] == pytest.approx(value), name


def test_the_compare_page_compares_at_the_level_chosen_on_the_overview(chunked):
    at = _open_files(chunked, parent="parent")
    _levels(at)[0].set_value("document").run()
    app.open_page(at, "compare")
    assert _levels(at)[0].value == "document"  # the choice carries across pages
    at.selectbox(key="cmp_ref").set_value("ann").run()
    app.assert_clean(at)
    rows = app.frame_with(at, "mean diff").set_index(["run", "metric"])
    _no_none(rows)
    want = _document_metrics("ndcg@10")
    # the paired mean difference of the per-query values is the difference of the means (same queries)
    assert rows.loc[("bm25l", "ndcg@10"), "mean diff"] == pytest.approx(want["bm25l"] - want["ann"])
    _levels(at)[0].set_value("chunk").run()
    chunk_rows = app.frame_with(at, "mean diff").set_index(["run", "metric"])
    assert chunk_rows.loc[("bm25l", "ndcg@10"), "mean diff"] != pytest.approx(want["bm25l"] - want["ann"])


def test_the_overview_shows_context_precision_and_recall_of_a_golden_set_of_contexts(chunked, capsys):
    examples, _, _ = golden_examples()
    golden = chunked["qrels"].with_name("golden.jsonl")
    golden.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
    at = _open_files(chunked, parent="parent", qrels=golden)
    table = app.frame_with(at, "context_precision@10").set_index("run")
    _no_none(table[["context_precision@10", "context_recall@10"]])
    # the same numbers as diagnose evaluate's report (the retrieved chunks, located in their documents)
    args = ["--corpus", str(chunked["corpus"]), "--qrels", str(golden), "--parent-field", "parent"]
    runs = [a for n in RUNS for a in ("--run", f"{n}={chunked[n]}")]
    assert main(["evaluate", *args, *runs, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["context"]
    assert report["level"] == "chunk"
    for name in RUNS:
        for m in ("context_precision@10", "context_recall@10"):
            assert table.loc[name, m] == pytest.approx(report["runs"][name]["aggregate"][m]), (name, m)
    assert 0 < table.loc["ann", "context_recall@10"] <= 1


def test_without_spans_there_is_no_context_column():
    at = app.demo_app()
    assert not any(c.startswith("context_") for c in app.frame_with(at, "run").columns)
