"""The Streamlit app's sidebar, with AppTest on the demo corpus and the fake keyword encoder: k and the recall
definition, models, data sources (a BEIR folder, file paths, uploads, precomputed vectors) and their errors, the
downloads and the report.

How these tests work (the fake keyword encoder, expected values from the demo files): tests/app_testing.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import app_testing as app
import pytest

from diagnose import report
from diagnose.data import DataError
from diagnose.failures import CLASS_LABELS
from diagnose.ui import sources

pytestmark = pytest.mark.usefixtures("keyword_encoder")


def test_changing_k_reuses_the_vectors_and_the_index():
    at = app.demo_app()
    before = at.session_state["_bundle"]
    at.number_input(key="k").set_value(5).run()
    app.assert_clean(at)
    after = at.session_state["_bundle"]
    assert after.k == 5
    assert after.analysis.space is before.analysis.space  # not re-encoded
    assert after.analysis.bm25 is before.analysis.bm25  # not re-indexed
    assert "ndcg@5" in app.frame_with(at, "run").columns


def test_recall_definition_finds_at_least_as_many_failures():
    at = app.open_demo("worst")
    n_hit = len(app.frame_with(at, "class"))
    at.radio(key="mode").set_value("recall").run()
    app.assert_clean(at)
    assert len(app.frame_with(at, "class")) >= n_hit


def test_a_model_that_fails_to_load_shows_the_message():
    at = app.demo_app()
    at.text_input(key="model").input("/nonexistent/model-folder").run()
    assert not at.exception
    assert at.error and "/nonexistent/model-folder" in app.unescaped(at.error[0].value)
    # the data was read: its validation report is still one click away
    assert any("Validation report" in p.label for p in at.get("page_link"))
    at.switch_page(app.PAGES.format("data")).run()
    assert not at.exception
    assert any(s.value == "Validation report" for s in at.subheader)


def test_a_missing_beir_folder_is_reported_not_raised():
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("beir").run()
    at.text_input(key="beir_dir").input("/nonexistent/beir").run()
    assert not at.exception
    shown = app.unescaped(" ".join(x.value for x in [*at.error, *at.info]))
    assert "/nonexistent/beir" in shown


def test_typed_paths_outside_the_data_root_are_refused(tmp_path, monkeypatch):
    """The sidebar reads files under the folder the app was started in (or DIAGNOSE_DATA_ROOT) only: not
    /etc/passwd, not a symbolic link out of the root, not a folder typed as the corpus outside it."""
    (tmp_path / "escape").symlink_to("/etc")
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(tmp_path))
    for corpus in ("/etc/passwd", "escape/passwd", "../../etc", str(app.ROOT)):
        with pytest.raises(DataError, match="outside the data folder"):
            sources.files_spec(corpus, "q.jsonl", "qrels.tsv", "")
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("files").run()
    at.text_input(key="f_corpus").input("/etc/passwd")
    at.text_input(key="f_queries").input("/etc/passwd")
    at.text_input(key="f_qrels").input("/etc/passwd").run()
    assert not at.exception
    shown = app.unescaped(" ".join(x.value for x in [*at.error, *at.info]))
    assert "outside the data folder" in shown and "root:" not in shown


def test_file_paths_source():
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("files").run()
    at.text_input(key="f_corpus").input(str(app.DEMO / "corpus.jsonl"))
    at.text_input(key="f_queries").input(str(app.DEMO / "queries.jsonl"))
    at.text_input(key="f_qrels").input(str(app.DEMO / "qrels" / "test.tsv"))
    at.text_area(key="f_runs").input(f"prod={app.DEMO / 'runs' / 'ann_minilm.trec'}").run()
    app.assert_clean(at)
    assert sorted(app.frame_with(at, "run")["run"]) == sorted(["prod", *app.BASELINES])


def test_uploads_are_read_by_the_same_readers(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "UPLOAD_ROOT", tmp_path)
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("upload").run()

    def up(path: Path):
        return (path.name, path.read_bytes(), "application/octet-stream")

    at.file_uploader(key="up_corpus").set_value(up(app.DEMO / "corpus.jsonl"))
    at.file_uploader(key="up_queries").set_value(up(app.DEMO / "queries.jsonl"))
    at.file_uploader(key="up_qrels").set_value(up(app.DEMO / "qrels" / "test.tsv"))
    at.file_uploader(key="up_runs").set_value([up(p) for p in sorted((app.DEMO / "runs").glob("*.trec"))])
    at.run()
    app.assert_clean(at)
    assert sorted(app.frame_with(at, "run")["run"]) == sorted(app.DEMO_RUNS + app.BASELINES)
    assert list(tmp_path.iterdir()), "uploads were not written to the temp dir"


def test_a_broken_upload_shows_the_reader_message(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "UPLOAD_ROOT", tmp_path)
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("upload").run()
    at.file_uploader(key="up_corpus").set_value(
        ("corpus.jsonl", (app.DEMO / "corpus.jsonl").read_bytes(), "x")
    )
    at.file_uploader(key="up_queries").set_value(
        ("queries.jsonl", (app.DEMO / "queries.jsonl").read_bytes(), "x")
    )
    at.file_uploader(key="up_qrels").set_value(("qrels.tsv", b"this is not\x00a qrels file\n", "x"))
    at.run()
    assert not at.exception
    assert at.error


def test_sidebar_has_the_downloads_and_the_report_link():
    at = app.demo_app()
    labels = [d.label for d in at.get("download_button")]
    assert any("CSV" in lbl for lbl in labels) and any("JSON" in lbl for lbl in labels)
    assert any("Markdown" in lbl for lbl in labels)
    assert any("Validation report" in p.label for p in at.get("page_link"))


def test_report_and_exports_cover_every_run():
    at = app.demo_app()
    b = at.session_state["_bundle"]
    from diagnose.failures import diagnose_run
    from diagnose.metrics import evaluate_many

    names = [f"ndcg@{b.k}", f"recall@{b.k}"]
    evs = evaluate_many(b.ds.qrels, b.runs, names)
    frame = report.per_query_frame(evs)
    assert set(frame["run"]) == set(b.runs)
    scores = report.EvaluationReport(metrics=names, ks=[b.k], evaluations=evs, reference=app.DEMO_RUNS[0])
    payload = json.loads(scores.to_json(per_query=True))
    assert set(payload["runs"]) == set(b.runs)
    assert all(set(r["per_query"]) == set(b.golden) for r in payload["runs"].values())
    run = app.DEMO_RUNS[0]
    diag = diagnose_run(b.ds, b.runs[run], b.analysis.space, b.analysis.bm25, k=b.k)
    metrics = __import__("pandas").DataFrame(
        [
            {"run": n, "kind": b.kinds[n], "queries": 1, f"ndcg@{b.k}": ev.aggregate[f"ndcg@{b.k}"]}
            for n, ev in evs.items()
        ]
    )
    md = report.markdown_report(
        data_label="demo",
        data_lines=[],
        model=b.encoder_name,
        k=b.k,
        mode="hit",
        metrics=metrics,
        diagnosis=diag,
        validation=b.ds.report,
    )
    for name in b.runs:
        assert f"| {name} |" in md
    for cls, n in diag.class_counts.items():
        if n:
            assert CLASS_LABELS[cls] in md
    assert json.loads(report.dumps(report.failures_dict(diag)))["run"] == run


def test_precomputed_vectors_typed_in_the_sidebar_replace_the_model(tmp_path, monkeypatch):
    """The vectors of a production index (here: keyword vectors of the demo, as .npy + id files) are used as they
    are: the dense baseline is exact search over exactly them."""
    import numpy as np

    from diagnose import load
    from diagnose.embed import KeywordEncoder
    from diagnose.search.baselines import dense_run

    ds = load(app.DEMO)
    enc = KeywordEncoder(dim=64)
    qids = ds.qrels.queries_with_relevant()
    texts = ds.queries.text_of()
    np.save(tmp_path / "docs.npy", enc.encode(ds.corpus.texts()))
    np.save(tmp_path / "queries.npy", enc.encode([texts[q] for q in qids]))
    (tmp_path / "doc_ids.txt").write_text("\n".join(ds.corpus.ids) + "\n")
    (tmp_path / "query_ids.txt").write_text("\n".join(qids) + "\n")
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(tmp_path))
    at = app.demo_app()
    for key, name in (
        ("doc", "docs.npy"),
        ("query", "queries.npy"),
        ("doc_ids", "doc_ids.txt"),
        ("query_ids", "query_ids.txt"),
    ):
        at.text_input(key=f"emb_{key}").input(name)
    at.run()
    app.assert_clean(at)
    b = at.session_state["_bundle"]
    assert b.analysis.space.model.startswith("precomputed:") and b.analysis.space.dim == 64
    expected = dense_run(
        enc.encode(ds.corpus.texts()), enc.encode([texts[q] for q in qids]), list(ds.corpus.ids), qids
    )
    got = b.runs["dense"].ranked_lists()
    want = expected.ranked_lists()
    assert set(got) == set(want)
    # the same ranked lists (the depth-100 cut may take different ones of documents tied at the cut: compare the
    # top 10, where ties are rare, and the scores everywhere)
    assert all(got[q][:10] == want[q][:10] for q in want)
    np.testing.assert_allclose(np.sort(b.runs["dense"].df["score"]), np.sort(expected.df["score"]), atol=1e-6)
    assert "precomputed vectors" in b.encoder_label


def test_a_golden_set_of_reference_contexts_brings_its_queries():
    """A LlamaIndex LabelledRagDataset typed as the qrels: no queries file needed, its contexts are located in the
    corpus (tests/test_io_golden.py checks the mapping)."""
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("files").run()
    at.text_input(key="f_corpus").input(str(app.DEMO / "corpus.jsonl"))
    golden = Path(__file__).resolve().parent / "fixtures" / "golden" / "labelled_rag_demo.json"
    at.text_input(key="f_qrels").input(str(golden))
    at.text_area(key="f_runs").input(f"prod={app.DEMO / 'runs' / 'ann_minilm.trec'}").run()
    app.assert_clean(at)
    assert "prod" in set(app.frame_with(at, "run")["run"])


def test_the_downloads_offer_the_report_to_share_with_the_overviews_findings():
    import html
    import re

    from diagnose.ui.downloads import report_html

    at = app.demo_app()
    assert "Report to share (HTML)" in [d.label for d in at.get("download_button")]
    b = at.session_state["_bundle"]
    page = report_html(b, b.selected_run)
    found = b.analysis.findings(b.selected_run, k=b.k, failure=b.mode)
    section = page.split("<section id='findings'>", 1)[1].split("</section>", 1)[0]
    assert re.findall(r"<li>(.*?)</li>", section) == [html.escape(a.sentence()) for a in found]
    assert "<script" not in page and page.count("<svg") == page.count("<figure>") == 3
