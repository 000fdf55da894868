"""The Streamlit app, page by page, with AppTest on the demo corpus and the fake keyword encoder.

``DIAGNOSE_ENCODER=keyword`` makes the app use :class:`diagnose.embed.KeywordEncoder` instead of the bundled model
(see diagnose/ui/state.py), so each page renders in about a second. Expected values come from the demo files
themselves (run files on disk, lines of corpus.jsonl), never from the app's own output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from app_testing import PAGES, ROOT, assert_clean, open_page, start_app  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from diagnose import report  # noqa: E402
from diagnose.data import DataError  # noqa: E402
from diagnose.failures import CLASS_LABELS, RECOMMENDATIONS  # noqa: E402
from diagnose.ui import sources, text  # noqa: E402

pytestmark = pytest.mark.usefixtures("keyword_encoder")

DEMO = ROOT / "demo_corpus"
TIMEOUT = 120
DEMO_RUNS = sorted(p.name.split(".")[0] for p in (DEMO / "runs").iterdir() if p.suffix == ".trec")


def _shown(markdown: str) -> str:
    """What a reader sees of escaped markdown: user text in messages is backslash-escaped (never rendered)."""
    return re.sub(r"\\(.)", r"\1", markdown)


BASELINES = ["bm25", "dense", "hybrid"]


def _app() -> AppTest:
    return start_app(TIMEOUT)


def _open(page: str, at: AppTest | None = None) -> AppTest:
    return open_page(at or _app(), page)


def _charts(at: AppTest) -> list:
    return list(at.get("arrow_vega_lite_chart")) + list(at.get("vega_lite_chart"))


def _frame_with(at: AppTest, column: str):
    frames = [d.value for d in at.dataframe if column in d.value.columns]
    assert frames, f"no table with a {column!r} column"
    return frames[0]


# ------------------------------------------------------------------------------------------------ pages


def test_opens_on_the_demo_without_configuration():
    at = _app()
    assert_clean(at)
    assert at.title[0].value == "Overview"
    assert at.session_state["_bundle"] is not None


def test_overview_has_one_row_per_run_and_baseline():
    at = _open("overview")
    table = _frame_with(at, "run")
    assert sorted(table["run"]) == sorted(DEMO_RUNS + BASELINES)
    assert table["run"].is_unique
    k = at.number_input(key="k").value
    for fam in ("recall", "ndcg", "mrr", "hit_rate"):
        col = f"{fam}@{k}"
        assert col in table.columns
        assert table[col].between(0, 1).all()


def test_overview_draws_the_curves_and_the_failure_breakdown():
    at = _open("overview")
    assert len(_charts(at)) >= 3  # recall@k curve, nDCG@k curve, failure breakdown


def test_worst_queries_table_is_not_empty_and_filters_by_class():
    at = _open("worst")
    table = _frame_with(at, "class")
    assert len(table) > 0
    assert set(table["class"]) <= set(CLASS_LABELS.values())
    ms = at.multiselect(key="worst_classes")
    one = ms.value[0]
    ms.set_value([one]).run()
    assert_clean(at)
    filtered = _frame_with(at, "class")
    assert 0 < len(filtered) <= len(table)
    assert set(filtered["class"]) == {CLASS_LABELS[one]}


def test_selecting_a_row_opens_the_inspector_on_that_query():
    at = _open("worst")
    table = _frame_with(at, "query_id")
    row = len(table) - 1
    at.session_state["worst_table"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    assert_clean(at)
    assert at.title[0].value == "Query inspector"
    assert at.selectbox(key="inspector_query").value == table["query_id"].iloc[row]


def test_inspector_shows_class_evidence_recommendation_and_both_rules():
    at = _open("inspector")
    md = "\n".join(m.value for m in at.markdown)
    assert any(label in md for label in CLASS_LABELS.values())
    assert "**Evidence.**" in md
    assert "**Seed rule**" in md and "**Calibrated rule**" in md
    infos = "\n".join(i.value for i in at.info)
    assert any(rec in infos for rec in RECOMMENDATIONS.values())
    top = _frame_with(at, "judgement")
    k = at.number_input(key="k").value
    assert 0 < len(top) <= k
    assert list(top["rank"]) == list(range(1, len(top) + 1))


def test_inspector_switches_query_with_its_selectbox():
    at = _open("inspector")
    sb = at.selectbox(key="inspector_query")
    assert len(sb.options) >= 2
    other = sb.options[1].split(": ", 1)[0]  # options are shown as "query_id: text"
    sb.select(other).run()
    assert_clean(at)
    assert at.selectbox(key="inspector_query").value == other
    assert at.session_state["query_id"] == other
    assert any(m.value.startswith(f"**{text.escape_md(other)}**") for m in at.markdown)


def test_map_page_has_a_chart_and_says_how_many_points_it_shows():
    at = _open("map")
    assert len(_charts(at)) >= 1
    captions = " ".join(c.value for c in at.caption) + " ".join(m.value for m in at.markdown)
    assert re.search(r"showing \d[\d,]* of \d[\d,]*", captions, re.I), captions
    assert re.search(r"trustworthiness", captions, re.I)


def test_clicking_a_failed_query_on_the_map_opens_it_in_the_inspector():
    at = _open("map")
    diag_failed = at.session_state["_bundle"].diagnosis().failed_queries
    qid = diag_failed[-1]
    at.session_state["map_chart"] = {"selection": {"query_select": [{"id": qid}]}}
    at.run()
    assert_clean(at)
    assert at.title[0].value == "Query inspector"
    assert at.selectbox(key="inspector_query").value == qid


def test_the_run_picked_in_the_sidebar_is_the_one_diagnosed():
    at = _open("worst")
    other = DEMO_RUNS[-1] if DEMO_RUNS[-1] != at.selectbox(key="run").value else DEMO_RUNS[0]
    at.selectbox(key="run").set_value(other).run()
    assert_clean(at)
    assert f"Run **{text.escape_md(other)}**" in " ".join(c.value for c in at.caption)
    assert len(_frame_with(at, "class")) == len(at.session_state["_bundle"].diagnosis(other).failures)


def test_similarity_page_has_a_histogram():
    at = _open("similarity")
    assert len(_charts(at)) >= 1


def test_compare_page_shows_tests_and_verdicts():
    at = _open("compare")
    table = _frame_with(at, "p (Holm)")
    n_runs = len(DEMO_RUNS) + len(BASELINES)
    n_metrics = len(at.multiselect(key="cmp_metrics").value)
    assert len(table) == (n_runs - 1) * n_metrics
    assert len(_charts(at)) >= 1


def test_compare_table_opens_a_fixed_query_in_the_run_where_it_fails():
    at = _open("compare")
    table = _frame_with(at, "change")
    ref, other = at.selectbox(key="cmp_ref").value, at.selectbox(key="cmp_other").value
    fixed = table.index[table["change"] == "fixed"]
    assert len(fixed), "the demo baselines fix some of the reference run's queries"
    row = int(fixed[0])
    qid = table["query_id"].iloc[row]
    assert table[f"fails in {ref}"].iloc[row]  # a fixed query failed in the reference: its class is shown
    at.session_state["cmp_table"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    assert_clean(at)
    assert at.title[0].value == "Query inspector"
    assert at.selectbox(key="run").value == (other if table[f"fails in {other}"].iloc[row] else ref)
    assert at.selectbox(key="inspector_query").value == qid


def test_compare_page_shows_what_if_fusion_of_the_two_runs():
    at = _open("compare")
    ref, other = at.selectbox(key="cmp_ref").value, at.selectbox(key="cmp_other").value
    fusions = _frame_with(at, "fusion")
    assert fusions["fusion"].iloc[0].startswith("rrf")
    assert {f"recovers_{ref}", f"recovers_{other}", f"loses_{ref}", f"loses_{other}"} <= set(fusions.columns)
    k = at.number_input(key="k").value
    assert fusions[f"ndcg@{k}"].between(0, 1).all()


def test_compare_page_slices_by_query_metadata():
    at = _open("compare")
    sliced = _frame_with(at, "n")
    field = at.selectbox(key="cmp_slice").value
    areas = {
        json.loads(line)["metadata"][field] for line in (DEMO / "queries.jsonl").read_text().splitlines()
    }
    assert set(sliced[field]) == areas
    assert sliced["n"].sum() == len(
        {line.split("\t")[0] for line in (DEMO / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    )


def test_golden_set_page_finds_the_planted_duplicates_and_conflicts():
    planted = json.loads((DEMO / "planted.json").read_text(encoding="utf-8"))
    at = _open("golden")
    dups = _frame_with(at, "original")
    found = {frozenset(p) for p in zip(dups["doc_id"], dups["duplicate_of"], strict=True)}
    for pair in planted["near-duplicates"]:
        assert frozenset((pair["duplicate"], pair["of"])) in found, pair
    conflicts = " ".join(_frame_with(at, "judgements")["query_ids"])
    for q in planted["duplicate-query"]:
        assert q["query_id"] in conflicts
    hubs = _frame_with(at, "occurrences")
    assert (hubs["share"] >= 0.1).all() and len(hubs) > 0
    # every planted near-duplicate that the diagnosed run puts in a label-gap query's top k is flagged as unjudged
    run = at.selectbox(key="run").value
    k = at.number_input(key="k").value
    lines = [ln.split() for ln in (DEMO / "runs" / f"{run}.trec").read_text().splitlines() if ln.strip()]
    dup_of = {p["of"]: p["duplicate"] for p in planted["near-duplicates"]}
    expected = set()
    for item in planted["label-gap"]:
        q = item["query_id"]
        # trec_eval's order: score descending, ties by document id descending
        ranked = sorted(
            (ln for ln in lines if ln[0] == q), key=lambda ln: (float(ln[4]), ln[2]), reverse=True
        )
        top = [ln[2] for ln in ranked[:k]]
        expected |= {(q, dup_of[d]) for d in item["relevant"] if dup_of.get(d) in top}
    assert expected, "the demo run retrieves some planted duplicates in the top k"
    unjudged = _frame_with(at, "grade of the original")
    assert expected <= set(zip(unjudged["query_id"], unjudged["doc_id"], strict=True))


def test_data_page_shows_the_report_and_counts():
    at = _open("data")
    assert any(s.value == "Validation report" for s in at.subheader)
    metrics = {m.label: m.value for m in at.metric}
    n_docs = sum(
        1 for line in (DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    )
    n_queries = sum(
        1 for line in (DEMO / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    )
    n_qrels = sum(
        1
        for line in (DEMO / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
        if line.strip()
    )
    assert metrics["Documents"] == f"{n_docs:,}"
    assert metrics["Queries"] == f"{n_queries:,}"
    assert metrics["Qrels rows"] == f"{n_qrels:,}"
    runs = _frame_with(at, "depth (max)")
    assert sorted(runs["run"]) == sorted(DEMO_RUNS + BASELINES)


def _compare_models(at: AppTest, models: str) -> AppTest:
    at.text_area(key="models_extra").input(models)
    at.button(key="models_submit").click().run()
    return at


def test_model_choice_page_scores_the_sidebar_model_like_the_dense_baseline():
    at = _open("models")
    table = _frame_with(at, "docs/s")
    assert len(table) == 1 and table["rank"].tolist() == [1]
    b = at.session_state["_bundle"]
    assert table["dim"].tolist() == [b.analysis.space.dim]
    # the model's exact dense run is the app's dense baseline: the same nDCG (scored by the overview's code path)
    k = b.k
    assert table[f"ndcg@{k}"].iloc[0] == pytest.approx(
        b.evaluations()["dense"].aggregate[f"ndcg@{k}"], abs=1e-12
    )
    assert table["CI low"].iloc[0] <= table[f"ndcg@{k}"].iloc[0] <= table["CI high"].iloc[0]
    assert len(_charts(at)) >= 1


def test_model_choice_reports_a_model_that_cannot_load():
    at = _compare_models(_open("models"), "/nonexistent/model-folder")
    assert not at.exception
    assert at.error and "/nonexistent/model-folder" in _shown(at.error[0].value)
    assert len(_frame_with(at, "docs/s")) == 1  # the sidebar's model is still compared


@pytest.mark.real_model
def test_model_choice_compares_the_bundled_model_with_the_sidebar_model():
    at = _compare_models(_open("models"), "all-MiniLM-L6-v2")
    assert_clean(at)
    table = _frame_with(at, "docs/s")
    assert len(table) == 2
    assert sorted(table["dim"]) == sorted({at.session_state["_bundle"].analysis.space.dim, 384})
    assert (table["docs/s"] > 0).all() and table["rank"].iloc[0] == 1
    # the second model is now offered on the Similarity page too
    at.switch_page(PAGES.format("similarity")).run()
    assert_clean(at)
    assert len(at.multiselect(key="sim_models").options) == 2


# ------------------------------------------------------------------------------------------------ sidebar


def test_changing_k_reuses_the_vectors_and_the_index():
    at = _app()
    before = at.session_state["_bundle"]
    at.number_input(key="k").set_value(5).run()
    assert_clean(at)
    after = at.session_state["_bundle"]
    assert after.k == 5
    assert after.analysis.space is before.analysis.space  # not re-encoded
    assert after.analysis.bm25 is before.analysis.bm25  # not re-indexed
    assert "ndcg@5" in _frame_with(at, "run").columns


def test_recall_definition_finds_at_least_as_many_failures():
    at = _open("worst")
    n_hit = len(_frame_with(at, "class"))
    at.radio(key="mode").set_value("recall").run()
    assert_clean(at)
    assert len(_frame_with(at, "class")) >= n_hit


def test_a_model_that_fails_to_load_shows_the_message():
    at = _app()
    at.text_input(key="model").input("/nonexistent/model-folder").run()
    assert not at.exception
    assert at.error and "/nonexistent/model-folder" in _shown(at.error[0].value)
    # the data was read: its validation report is still one click away
    assert any("Validation report" in p.label for p in at.get("page_link"))
    at.switch_page(PAGES.format("data")).run()
    assert not at.exception
    assert any(s.value == "Validation report" for s in at.subheader)


def test_a_missing_beir_folder_is_reported_not_raised():
    at = _app()
    at.selectbox(key="src_kind").set_value("beir").run()
    at.text_input(key="beir_dir").input("/nonexistent/beir").run()
    assert not at.exception
    shown = _shown(" ".join(x.value for x in [*at.error, *at.info]))
    assert "/nonexistent/beir" in shown


def test_typed_paths_outside_the_data_root_are_refused(tmp_path, monkeypatch):
    """The sidebar reads files under the folder the app was started in (or DIAGNOSE_DATA_ROOT) only: not
    /etc/passwd, not a symbolic link out of the root, not a folder typed as the corpus outside it."""
    (tmp_path / "escape").symlink_to("/etc")
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(tmp_path))
    for corpus in ("/etc/passwd", "escape/passwd", "../../etc", str(ROOT)):
        with pytest.raises(DataError, match="outside the data folder"):
            sources.files_spec(corpus, "q.jsonl", "qrels.tsv", "")
    at = _app()
    at.selectbox(key="src_kind").set_value("files").run()
    at.text_input(key="f_corpus").input("/etc/passwd")
    at.text_input(key="f_queries").input("/etc/passwd")
    at.text_input(key="f_qrels").input("/etc/passwd").run()
    assert not at.exception
    shown = _shown(" ".join(x.value for x in [*at.error, *at.info]))
    assert "outside the data folder" in shown and "root:" not in shown


def test_file_paths_source():
    at = _app()
    at.selectbox(key="src_kind").set_value("files").run()
    at.text_input(key="f_corpus").input(str(DEMO / "corpus.jsonl"))
    at.text_input(key="f_queries").input(str(DEMO / "queries.jsonl"))
    at.text_input(key="f_qrels").input(str(DEMO / "qrels" / "test.tsv"))
    at.text_area(key="f_runs").input(f"prod={DEMO / 'runs' / 'ann_minilm.trec'}").run()
    assert_clean(at)
    assert sorted(_frame_with(at, "run")["run"]) == sorted(["prod", *BASELINES])


def test_uploads_are_read_by_the_same_readers(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "UPLOAD_ROOT", tmp_path)
    at = _app()
    at.selectbox(key="src_kind").set_value("upload").run()

    def up(path: Path):
        return (path.name, path.read_bytes(), "application/octet-stream")

    at.file_uploader(key="up_corpus").set_value(up(DEMO / "corpus.jsonl"))
    at.file_uploader(key="up_queries").set_value(up(DEMO / "queries.jsonl"))
    at.file_uploader(key="up_qrels").set_value(up(DEMO / "qrels" / "test.tsv"))
    at.file_uploader(key="up_runs").set_value([up(p) for p in sorted((DEMO / "runs").glob("*.trec"))])
    at.run()
    assert_clean(at)
    assert sorted(_frame_with(at, "run")["run"]) == sorted(DEMO_RUNS + BASELINES)
    assert list(tmp_path.iterdir()), "uploads were not written to the temp dir"


def test_a_broken_upload_shows_the_reader_message(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "UPLOAD_ROOT", tmp_path)
    at = _app()
    at.selectbox(key="src_kind").set_value("upload").run()
    at.file_uploader(key="up_corpus").set_value(("corpus.jsonl", (DEMO / "corpus.jsonl").read_bytes(), "x"))
    at.file_uploader(key="up_queries").set_value(
        ("queries.jsonl", (DEMO / "queries.jsonl").read_bytes(), "x")
    )
    at.file_uploader(key="up_qrels").set_value(("qrels.tsv", b"this is not\x00a qrels file\n", "x"))
    at.run()
    assert not at.exception
    assert at.error


def test_sidebar_has_the_downloads_and_the_report_link():
    at = _app()
    labels = [d.label for d in at.get("download_button")]
    assert any("CSV" in lbl for lbl in labels) and any("JSON" in lbl for lbl in labels)
    assert any("Markdown" in lbl for lbl in labels)
    assert any("Validation report" in p.label for p in at.get("page_link"))


def test_report_and_exports_cover_every_run():
    at = _app()
    b = at.session_state["_bundle"]
    from diagnose.failures import diagnose_run
    from diagnose.metrics import evaluate_many

    names = [f"ndcg@{b.k}", f"recall@{b.k}"]
    evs = evaluate_many(b.ds.qrels, b.runs, names)
    frame = report.per_query_frame(evs)
    assert set(frame["run"]) == set(b.runs)
    scores = report.EvaluationReport(metrics=names, ks=[b.k], evaluations=evs, reference=DEMO_RUNS[0])
    payload = json.loads(scores.to_json(per_query=True))
    assert set(payload["runs"]) == set(b.runs)
    assert all(set(r["per_query"]) == set(b.golden) for r in payload["runs"].values())
    run = DEMO_RUNS[0]
    diag = diagnose_run(b.ds, b.runs[run], b.analysis.space, b.analysis.bm25, k=b.k)
    metrics = __import__("pandas").DataFrame(
        [
            {"run": n, "kind": b.kinds[n], "queries": 1, f"ndcg@{b.k}": ev.aggregate[f"ndcg@{b.k}"]}
            for n, ev in evs.items()
        ]
    )
    md = report.markdown_report(
        data_label="demo", data_lines=[], model=b.encoder_name, k=b.k, mode="hit", metrics=metrics,
        diagnosis=diag, validation=b.ds.report,
    )  # fmt: skip
    for name in b.runs:
        assert f"| {name} |" in md
    for cls, n in diag.class_counts.items():
        if n:
            assert CLASS_LABELS[cls] in md
    assert json.loads(report.dumps(report.failures_dict(diag)))["run"] == run


# ------------------------------------------------------------------------------------------------ pure helpers


def test_escape_md_leaves_no_markdown_html_or_latex_active():
    raw = "**bold** <b>x</b> $x^2$ :red[y] [link](http://e.x) `code` # h"
    out = text.escape_md(raw)
    # every ASCII punctuation character is preceded by a backslash
    for i, ch in enumerate(out):
        if ch in "*<>$:[]()`#" and (i == 0 or out[i - 1] != "\\"):
            raise AssertionError(f"unescaped {ch!r} at {i} in {out!r}")
    assert out.replace("\\", "") == raw


def test_highlight_md_bolds_exactly_the_spans():
    # "Statin use; statins work": spans (0, 6) "Statin" and (12, 19) "statins"
    out = text.highlight_md("Statin use; statins work", [(0, 6), (12, 19)])
    assert out == "**Statin** use\\; **statins** work"


def test_upload_spec_writes_once_per_content(tmp_path):
    a = sources.Upload("corpus.jsonl", b'{"_id": "d1", "text": "x"}\n')
    q = sources.Upload("queries.jsonl", b'{"_id": "q1", "text": "x"}\n')
    r = sources.Upload("qrels.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    s1 = sources.upload_spec(a, q, r, [], root=tmp_path)
    s2 = sources.upload_spec(a, q, r, [], root=tmp_path)
    assert s1 == s2 and Path(s1.corpus).read_bytes() == a.data
    assert len(list(tmp_path.iterdir())) == 1
    s3 = sources.upload_spec(a, q, sources.Upload("qrels.tsv", r.data + b"q1\td2\t0\n"), [], root=tmp_path)
    assert s3.qrels != s1.qrels and s3.fingerprint() != s1.fingerprint()


# ------------------------------------------------------------------------------------------------ real model


@pytest.mark.real_model
def test_overview_with_the_real_bundled_model(monkeypatch):
    monkeypatch.delenv("DIAGNOSE_ENCODER", raising=False)
    at = start_app(600)
    assert_clean(at)
    b = at.session_state["_bundle"]
    assert b.encoder_name.startswith("st-sha256:")
    table = _frame_with(at, "run")
    assert sorted(table["run"]) == sorted(DEMO_RUNS + BASELINES)
    assert len(_charts(at)) >= 3


# ------------------------------------------------------------------------------------------------ boundaries


def test_the_library_never_imports_streamlit():
    """Every library module (and the UI's pure helpers) imports without pulling Streamlit in."""
    import subprocess
    import sys

    lib = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "diagnose").rglob("*.py")
        if "ui" not in p.relative_to(ROOT / "diagnose").parts[:1] and p.name != "__main__.py"
    ) + [
        "diagnose.ui.sources",
        "diagnose.ui.text",
    ]
    assert "diagnose.analysis.pipeline" in lib and "diagnose.io.runs" in lib  # the packages' modules too
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in lib)
    code += (
        "assert 'streamlit' not in sys.modules, sorted(m for m in sys.modules if m.startswith('streamlit'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_no_page_renders_raw_html():
    for path in [ROOT / "app.py", *sorted((ROOT / "diagnose" / "ui").rglob("*.py"))]:
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"unsafe_allow_html\s*=", source), path
        assert "st.html(" not in source and "components.html(" not in source, path


# ------------------------------------------------------------------------------------------------ live retrievers


LIVE_MODULE = '''
"""A live retriever for the tests: BM25 over the demo corpus, as a user's RAG code would expose one."""
from pathlib import Path

from diagnose import load
from diagnose.lexical import BM25Index

_ds = load(Path(__file__).parent / "demo")
_index = BM25Index.build(_ds.corpus.texts(), list(_ds.corpus.ids))


def make_retriever():
    return lambda text: _index.search([text], 20)[0]
'''


def test_a_live_retriever_shows_its_latency_on_overview_and_model_choice(tmp_path, monkeypatch):
    (tmp_path / "demo").symlink_to(DEMO)
    (tmp_path / "my_rag.py").write_text(LIVE_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DIAGNOSE_RETRIEVERS", "live=my_rag:make_retriever")
    at = _app()
    assert_clean(at)
    table = _frame_with(at, "latency_p50_ms")
    row = table.set_index("run").loc["live"]
    assert row["kind"] == "live retriever" and row["latency_p95_ms"] >= row["latency_p50_ms"] > 0
    assert table.set_index("run")["latency_p50_ms"].drop("live").isna().all()
    at = _open("models", at)
    live = _frame_with(at, "retriever")
    assert live["retriever"].tolist() == ["live"] and (live["latency_p50_ms"] > 0).all()


# ------------------------------------------------------------------------------------------------ golden set evidence


def test_overview_shows_judgement_coverage_and_metric_bounds():
    at = _app()
    holes = _frame_with(at, "judged@10").set_index("run")
    b = at.session_state["_bundle"]
    assert set(holes.index) == set(b.runs)
    # bounds: the reported value is the lower bound, never above the upper one
    ndcg = b.analysis.evaluations(["ndcg@10"])
    for run, row in holes.iterrows():
        assert row["ndcg@10 lower"] == pytest.approx(ndcg[run].aggregate["ndcg@10"])
        assert row["ndcg@10 lower"] <= row["ndcg@10 upper"] <= 1
        assert 0 <= row["judged@10"] <= 1 and 0 <= row["hole@10"] <= 1


def test_worst_queries_shows_each_remedy_measured():
    at = _open("worst")
    table = _frame_with(at, "remedy")
    assert set(table["failure class"]) == set(CLASS_LABELS.values())
    shown = table.dropna(subset=["recovered"])
    assert (shown["recovered"] <= shown["failures"]).all()
    assert any("would recover" in m.value for m in at.markdown)


def test_golden_set_ranks_queries_by_risk_and_compare_runs_tukey():
    at = _open("golden")
    risk = _frame_with(at, "risk")
    assert risk["risk_rank"].tolist() == sorted(risk["risk_rank"])
    assert any("ROC AUC" in m.value for m in at.markdown)
    at = _open("compare", at)
    tukey = _frame_with(at, "p_tukey")
    n = len(at.session_state["_bundle"].runs)
    assert len(tukey) == n * (n - 1) // 2
    assert "effect size" in _frame_with(at, "p (Holm)").columns


# ------------------------------------------------------------------------------------------------ cold start


def test_metrics_come_before_the_vectors_and_pages_fill_in_when_they_are_ready(tmp_path, monkeypatch):
    """A slow model: the Overview shows the metrics of the runs and of BM25 at once, pages that need the vectors
    show the encoding's progress, switching pages does not restart it, and the pages fill in when it ends."""
    import time

    import streamlit as st

    st.cache_resource.clear()  # no analysis left ready by another test
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DIAGNOSE_ENCODER_DELAY", "0.02")  # ~6 s for the 296 demo texts
    monkeypatch.setenv("DIAGNOSE_FOREGROUND_SECONDS", "0")
    at = _app()
    assert_clean(at)
    b = at.session_state["_bundle"]
    assert not b.ready
    table = _frame_with(at, "run")
    assert sorted(table["run"]) == sorted([*DEMO_RUNS, "bm25"])  # dense and hybrid need the vectors
    assert table["failed queries"].isna().all()
    assert at.get("progress"), "no progress bar while encoding"
    background = b.background
    at = _open("worst", at)
    assert at.title[0].value == "Worst queries" and not [d for d in at.dataframe if "class" in d.value.columns]
    deadline = time.monotonic() + 120
    while not at.session_state["_bundle"].ready and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
    at.run()
    assert_clean(at)
    assert at.session_state["_bundle"].background is background  # one encoding, never restarted
    assert len(_frame_with(at, "class")) > 0
    st.cache_resource.clear()


# ------------------------------------------------------------------------------------------------ judge


def _judge(tmp_path, monkeypatch) -> tuple[AppTest, Path]:
    journal = tmp_path / "journal" / "judgements.jsonl"
    monkeypatch.setenv("DIAGNOSE_JOURNAL", str(journal))
    monkeypatch.setenv("DIAGNOSE_FOREGROUND_SECONDS", "120")  # wait for the vectors (background encoding)
    return _open("judge"), journal


def _current_pair(at: AppTest) -> tuple[str, str]:
    """The (query id, doc id) the page shows: its "Query ..." and "Document ..." headings."""
    heads = [m.value for m in at.markdown if m.value.startswith("##### ")]
    q = next(h for h in heads if h.startswith("##### Query "))
    d = next(h for h in heads if h.startswith("##### Document "))
    return _shown(q.removeprefix("##### Query ")), _shown(d.removeprefix("##### Document "))


def test_judge_page_appends_every_grade_to_the_journal_and_resumes(tmp_path, monkeypatch):
    from diagnose.judging import Journal

    at, journal = _judge(tmp_path, monkeypatch)
    assert at.title[0].value == "Judge"
    assert [b.label for b in at.button if b.key and b.key.startswith("judge_")] == [
        "0 · not relevant", "1 · related", "2 · relevant", "3 · highly relevant", "Skip",
    ]  # fmt: skip
    first = _current_pair(at)
    # the demo's planted near-duplicates come first: the reason says so
    assert any("near\\-duplicate of relevant" in m.value for m in at.markdown if m.value.startswith("**Why"))
    at.button(key="judge_2").click().run()
    assert_clean(at)
    second = _current_pair(at)
    assert second != first
    at.button(key="judge_skip").click().run()
    assert_clean(at)
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [(x["query_id"], x["doc_id"], x["grade"]) for x in lines] == [(*first, 2), (*second, "skip")]
    # the effect of the one graded judgement, per run
    assert any("after 1 judgement" in m.value for m in at.markdown)

    # reopening (a new session) resumes at the first pair not judged yet
    again = _open("judge")
    third = _current_pair(again)
    assert third not in (first, second)
    assert Journal(journal).judgements() == {first: 2, second: "skip"}
    assert any(s.value.startswith("Pair 3 of") for s in again.subheader)
    again.button(key="judge_0").click().run()
    assert Journal(journal).judgements()[third] == 0


def test_precomputed_vectors_typed_in_the_sidebar_replace_the_model(tmp_path, monkeypatch):
    """The vectors of a production index (here: keyword vectors of the demo, as .npy + id files) are used as they
    are: the dense baseline is exact search over exactly them."""
    import numpy as np

    from diagnose import load
    from diagnose.baselines import dense_run
    from diagnose.embed import KeywordEncoder

    ds = load(DEMO)
    enc = KeywordEncoder(dim=64)
    qids = ds.qrels.queries_with_relevant()
    texts = ds.queries.text_of()
    np.save(tmp_path / "docs.npy", enc.encode(ds.corpus.texts()))
    np.save(tmp_path / "queries.npy", enc.encode([texts[q] for q in qids]))
    (tmp_path / "doc_ids.txt").write_text("\n".join(ds.corpus.ids) + "\n")
    (tmp_path / "query_ids.txt").write_text("\n".join(qids) + "\n")
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(tmp_path))
    at = _app()
    for key, name in (("doc", "docs.npy"), ("query", "queries.npy"), ("doc_ids", "doc_ids.txt"),
                      ("query_ids", "query_ids.txt")):  # fmt: skip
        at.text_input(key=f"emb_{key}").input(name)
    at.run()
    assert_clean(at)
    b = at.session_state["_bundle"]
    assert b.analysis.space.model.startswith("precomputed:") and b.analysis.space.dim == 64
    expected = dense_run(enc.encode(ds.corpus.texts()), enc.encode([texts[q] for q in qids]), list(ds.corpus.ids),
                         qids)  # fmt: skip
    got = b.runs["dense"].ranked_lists()
    want = expected.ranked_lists()
    assert set(got) == set(want)
    # the same ranked lists (the depth-100 cut may take different ones of documents tied at the cut: compare the
    # top 10, where ties are rare, and the scores everywhere)
    assert all(got[q][:10] == want[q][:10] for q in want)
    np.testing.assert_allclose(np.sort(b.runs["dense"].df["score"]), np.sort(expected.df["score"]), atol=1e-6)
    assert "precomputed vectors" in b.encoder_label


def test_starting_with_no_golden_set_builds_one_on_the_judge_page(tmp_path, monkeypatch):
    """A production query log and a corpus, no qrels: the pages that need a golden set say how to start one, the
    Judge page pools candidates (BM25, dense, hybrid) for every query and records grades."""
    from diagnose.judging import Journal

    journal = tmp_path / "journal" / "judgements.jsonl"
    monkeypatch.setenv("DIAGNOSE_JOURNAL", str(journal))
    at = _app()
    at.selectbox(key="src_kind").set_value("files").run()
    at.text_input(key="f_corpus").input(str(DEMO / "corpus.jsonl"))
    at.text_input(key="f_queries").input(str(DEMO / "queries.jsonl")).run()
    assert not at.exception
    assert any("no golden set yet" in i.value for i in at.info)
    at.switch_page(PAGES.format("judge")).run()
    assert_clean(at)
    assert at.title[0].value == "Judge"
    query, doc = _current_pair(at)
    next(b for b in at.button if b.key == "judge_2").click().run()
    assert_clean(at)
    assert Journal(journal).judgements() == {(query, doc): 2}
