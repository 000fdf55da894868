"""The Streamlit app, page by page (Overview, Worst queries, Inspector, Map, Similarity, Compare, Golden set, Data,
Model choice), with AppTest on the demo corpus and the fake keyword encoder.

How these tests work (the fake keyword encoder, expected values from the demo files): tests/app_testing.py.
"""

from __future__ import annotations

import json
import re

import app_testing as app
import pytest
from streamlit.testing.v1 import AppTest

from diagnose.failures import CLASS_LABELS, RECOMMENDATIONS
from diagnose.ui import text

pytestmark = pytest.mark.usefixtures("keyword_encoder")


def test_opens_on_the_demo_without_configuration():
    at = app.demo_app()
    app.assert_clean(at)
    assert at.title[0].value == "Overview"
    assert at.session_state["_bundle"] is not None


def test_overview_has_one_row_per_run_and_baseline():
    at = app.open_demo("overview")
    table = app.frame_with(at, "run")
    assert sorted(table["run"]) == sorted(app.DEMO_RUNS + app.BASELINES)
    assert table["run"].is_unique
    k = at.number_input(key="k").value
    for fam in ("recall", "ndcg", "mrr", "hit_rate"):
        col = f"{fam}@{k}"
        assert col in table.columns
        assert table[col].between(0, 1).all()


def test_overview_draws_the_curves_and_the_failure_breakdown():
    at = app.open_demo("overview")
    assert len(app.charts(at)) >= 3  # recall@k curve, nDCG@k curve, failure breakdown


def test_worst_queries_table_is_not_empty_and_filters_by_class():
    at = app.open_demo("worst")
    table = app.frame_with(at, "class")
    assert len(table) > 0
    assert set(table["class"]) <= set(CLASS_LABELS.values())
    ms = at.multiselect(key="worst_classes")
    one = ms.value[0]
    ms.set_value([one]).run()
    app.assert_clean(at)
    filtered = app.frame_with(at, "class")
    assert 0 < len(filtered) <= len(table)
    assert set(filtered["class"]) == {CLASS_LABELS[one]}


def test_worst_queries_says_where_the_measurement_overrules_a_rule():
    # the keyword encoder's demo has classes whose rule's remedy the matrix overrules (tests/test_advice.py)
    at = app.open_demo("worst")
    md = next(m.value for m in at.markdown if "Where the data overrules a class's rule" in m.value)
    lines = md.splitlines()[1:]
    # one item per class, in escaped Markdown (- ranking\_failure\: rule\: hybrid recovers 0\% ...)
    assert lines and all(x.startswith("- ") and "\\: rule" in x for x in lines)
    assert any("\\; measured\\: " in x for x in lines)


def test_selecting_a_row_opens_the_inspector_on_that_query():
    at = app.open_demo("worst")
    table = app.frame_with(at, "query_id")
    row = len(table) - 1
    at.session_state["worst_table"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    app.assert_clean(at)
    assert at.title[0].value == "Query inspector"
    assert at.selectbox(key="inspector_query").value == table["query_id"].iloc[row]


def test_inspector_shows_class_evidence_recommendation_and_both_rules():
    at = app.open_demo("inspector")
    md = "\n".join(m.value for m in at.markdown)
    assert any(label in md for label in CLASS_LABELS.values())
    assert "**Evidence.**" in md
    assert "**Seed rule**" in md and "**Calibrated rule**" in md
    infos = "\n".join(i.value for i in at.info)
    assert any(rec in infos for rec in RECOMMENDATIONS.values())
    top = app.frame_with(at, "judgement")
    k = at.number_input(key="k").value
    assert 0 < len(top) <= k
    assert list(top["rank"]) == list(range(1, len(top) + 1))


def test_inspector_switches_query_with_its_selectbox():
    at = app.open_demo("inspector")
    sb = at.selectbox(key="inspector_query")
    assert len(sb.options) >= 2
    other = sb.options[1].split(": ", 1)[0]  # options are shown as "query_id: text"
    sb.select(other).run()
    app.assert_clean(at)
    assert at.selectbox(key="inspector_query").value == other
    assert at.session_state["query_id"] == other
    assert any(m.value.startswith(f"**{text.escape_md(other)}**") for m in at.markdown)


def test_map_page_has_a_chart_and_says_how_many_points_it_shows():
    at = app.open_demo("map")
    assert len(app.charts(at)) >= 1
    captions = " ".join(c.value for c in at.caption) + " ".join(m.value for m in at.markdown)
    assert re.search(r"showing \d[\d,]* of \d[\d,]*", captions, re.I), captions
    assert re.search(r"trustworthiness", captions, re.I)


def test_clicking_a_failed_query_on_the_map_opens_it_in_the_inspector():
    at = app.open_demo("map")
    diag_failed = at.session_state["_bundle"].diagnosis().failed_queries
    qid = diag_failed[-1]
    at.session_state["map_chart"] = {"selection": {"query_select": [{"id": qid}]}}
    at.run()
    app.assert_clean(at)
    assert at.title[0].value == "Query inspector"
    assert at.selectbox(key="inspector_query").value == qid


def test_the_run_picked_in_the_sidebar_is_the_one_diagnosed():
    at = app.open_demo("worst")
    other = app.DEMO_RUNS[-1] if app.DEMO_RUNS[-1] != at.selectbox(key="run").value else app.DEMO_RUNS[0]
    at.selectbox(key="run").set_value(other).run()
    app.assert_clean(at)
    assert f"Run **{text.escape_md(other)}**" in " ".join(c.value for c in at.caption)
    assert len(app.frame_with(at, "class")) == len(at.session_state["_bundle"].diagnosis(other).failures)


def test_similarity_page_has_a_histogram():
    at = app.open_demo("similarity")
    assert len(app.charts(at)) >= 1


def test_compare_page_shows_tests_and_verdicts():
    at = app.open_demo("compare")
    table = app.frame_with(at, "p (Holm)")
    n_runs = len(app.DEMO_RUNS) + len(app.BASELINES)
    n_metrics = len(at.multiselect(key="cmp_metrics").value)
    assert len(table) == (n_runs - 1) * n_metrics
    assert len(app.charts(at)) >= 1


def test_compare_table_opens_a_fixed_query_in_the_run_where_it_fails():
    at = app.open_demo("compare")
    table = app.frame_with(at, "change")
    ref, other = at.selectbox(key="cmp_ref").value, at.selectbox(key="cmp_other").value
    fixed = table.index[table["change"] == "fixed"]
    assert len(fixed), "the demo baselines fix some of the reference run's queries"
    row = int(fixed[0])
    qid = table["query_id"].iloc[row]
    assert table[f"fails in {ref}"].iloc[row]  # a fixed query failed in the reference: its class is shown
    at.session_state["cmp_table"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    app.assert_clean(at)
    assert at.title[0].value == "Query inspector"
    assert at.selectbox(key="run").value == (other if table[f"fails in {other}"].iloc[row] else ref)
    assert at.selectbox(key="inspector_query").value == qid


def test_compare_page_shows_what_if_fusion_of_the_two_runs():
    at = app.open_demo("compare")
    ref, other = at.selectbox(key="cmp_ref").value, at.selectbox(key="cmp_other").value
    fusions = app.frame_with(at, "fusion")
    assert fusions["fusion"].iloc[0].startswith("rrf")
    assert {f"recovers_{ref}", f"recovers_{other}", f"loses_{ref}", f"loses_{other}"} <= set(fusions.columns)
    k = at.number_input(key="k").value
    assert fusions[f"ndcg@{k}"].between(0, 1).all()


def test_compare_page_slices_by_query_metadata():
    at = app.open_demo("compare")
    sliced = app.frame_with(at, "n")
    field = at.selectbox(key="cmp_slice").value
    areas = {
        json.loads(line)["metadata"][field] for line in (app.DEMO / "queries.jsonl").read_text().splitlines()
    }
    assert set(sliced[field]) == areas
    assert sliced["n"].sum() == len(
        {line.split("\t")[0] for line in (app.DEMO / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    )


def test_golden_set_page_finds_the_planted_duplicates_and_conflicts():
    planted = json.loads((app.DEMO / "planted.json").read_text(encoding="utf-8"))
    at = app.open_demo("golden")
    dups = app.frame_with(at, "original")
    found = {frozenset(p) for p in zip(dups["doc_id"], dups["duplicate_of"], strict=True)}
    for pair in planted["near-duplicates"]:
        assert frozenset((pair["duplicate"], pair["of"])) in found, pair
    conflicts = " ".join(app.frame_with(at, "judgements")["query_ids"])
    for q in planted["duplicate-query"]:
        assert q["query_id"] in conflicts
    hubs = app.frame_with(at, "occurrences")
    assert (hubs["share"] >= 0.1).all() and len(hubs) > 0
    # every planted near-duplicate that the diagnosed run puts in a label-gap query's top k is flagged as unjudged
    run = at.selectbox(key="run").value
    k = at.number_input(key="k").value
    lines = [ln.split() for ln in (app.DEMO / "runs" / f"{run}.trec").read_text().splitlines() if ln.strip()]
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
    unjudged = app.frame_with(at, "grade of the original")
    assert expected <= set(zip(unjudged["query_id"], unjudged["doc_id"], strict=True))


def test_data_page_shows_the_report_and_counts():
    at = app.open_demo("data")
    assert any(s.value == "Validation report" for s in at.subheader)
    metrics = {m.label: m.value for m in at.metric}
    n_docs = sum(
        1 for line in (app.DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    )
    n_queries = sum(
        1 for line in (app.DEMO / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    )
    n_qrels = sum(
        1
        for line in (app.DEMO / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
        if line.strip()
    )
    assert metrics["Documents"] == f"{n_docs:,}"
    assert metrics["Queries"] == f"{n_queries:,}"
    assert metrics["Qrels rows"] == f"{n_qrels:,}"
    runs = app.frame_with(at, "depth (max)")
    assert sorted(runs["run"]) == sorted(app.DEMO_RUNS + app.BASELINES)


def _compare_models(at: AppTest, models: str) -> AppTest:
    at.text_area(key="models_extra").input(models)
    at.button(key="models_submit").click().run()
    return at


def test_model_choice_page_scores_the_sidebar_model_like_the_dense_baseline():
    at = app.open_demo("models")
    table = app.frame_with(at, "docs/s")
    assert len(table) == 1 and table["rank"].tolist() == [1]
    b = at.session_state["_bundle"]
    assert table["dim"].tolist() == [b.analysis.space.dim]
    # the model's exact dense run is the app's dense baseline: the same nDCG (scored by the overview's code path)
    k = b.k
    assert table[f"ndcg@{k}"].iloc[0] == pytest.approx(
        b.evaluations()["dense"].aggregate[f"ndcg@{k}"], abs=1e-12
    )
    assert table["CI low"].iloc[0] <= table[f"ndcg@{k}"].iloc[0] <= table["CI high"].iloc[0]
    assert len(app.charts(at)) >= 1


def test_model_choice_reports_a_model_that_cannot_load():
    at = _compare_models(app.open_demo("models"), "/nonexistent/model-folder")
    assert not at.exception
    assert at.error and "/nonexistent/model-folder" in app.unescaped(at.error[0].value)
    assert len(app.frame_with(at, "docs/s")) == 1  # the sidebar's model is still compared


@pytest.mark.real_model
def test_model_choice_compares_the_bundled_model_with_the_sidebar_model(monkeypatch, model_cache):
    # the run's shared model_cache (conftest): the bundled model's vectors of the demo, as the other real-model
    # tests encode them
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(model_cache))
    at = _compare_models(app.open_demo("models"), "all-MiniLM-L6-v2")
    app.assert_clean(at)
    table = app.frame_with(at, "docs/s")
    assert len(table) == 2
    assert sorted(table["dim"]) == sorted({at.session_state["_bundle"].analysis.space.dim, 384})
    assert (table["docs/s"] > 0).all() and table["rank"].iloc[0] == 1
    # the second model is now offered on the Similarity page too
    at.switch_page(app.PAGES.format("similarity")).run()
    app.assert_clean(at)
    assert len(at.multiselect(key="sim_models").options) == 2


def test_overview_shows_judgement_coverage_and_metric_bounds():
    at = app.demo_app()
    holes = app.frame_with(at, "judged@10").set_index("run")
    b = at.session_state["_bundle"]
    assert set(holes.index) == set(b.runs)
    # bounds: the reported value is the lower bound, never above the upper one
    ndcg = b.analysis.evaluations(["ndcg@10"])
    for run, row in holes.iterrows():
        assert row["ndcg@10 lower"] == pytest.approx(ndcg[run].aggregate["ndcg@10"])
        assert row["ndcg@10 lower"] <= row["ndcg@10 upper"] <= 1
        assert 0 <= row["judged@10"] <= 1 and 0 <= row["hole@10"] <= 1


def test_worst_queries_shows_each_remedy_measured():
    at = app.open_demo("worst")
    table = app.frame_with(at, "remedy")
    assert set(table["failure class"]) == set(CLASS_LABELS.values())
    recovered = app.numbers(table["recovered (failed queries)"])  # "—" for a class without a remedy
    assert (recovered.dropna() <= table["failed queries"][recovered.notna()]).all()
    assert table["remedy"].notna().all()  # "no remedy offline" where there is none
    assert any("would recover" in m.value for m in at.markdown)


def test_worst_queries_shows_the_remedy_matrix_and_its_sentences():
    at = app.open_demo("worst")
    b = at.session_state["_bundle"]
    matrix = b.analysis.remedy_matrix(at.selectbox(key="run").value, k=b.k, failure=b.mode)
    assert matrix.classes and matrix.remedy_ids
    text = app.unescaped(" ".join(m.value for m in at.markdown))
    for sentence in matrix.sentences():  # one sentence per class with failures, below the heat map
        assert sentence in text
    specs = [json.loads(c.proto.spec) for c in app.charts(at)]
    heat = [s for s in specs if "Does the class predict the fix" in json.dumps(s.get("title", ""))]
    assert len(heat) == 1
    # the heat map, the outline of the own remedies, the m/n text (the data travels apart from the spec)
    assert [u["mark"]["type"] for u in heat[0]["layer"]] == ["rect", "rect", "text"]
    assert heat[0]["layer"][1]["transform"] == [{"filter": "datum.own"}]
    frame = matrix.frame()
    assert len(frame) == len(matrix.classes) * len(matrix.remedy_ids) and frame["own"].any()


def test_worst_queries_counts_add_up_in_failed_queries_and_missed_pairs():
    # every count on the page says its unit; the same units agree wherever they appear
    at = app.open_demo("worst")
    diag = at.session_state["_bundle"].diagnosis(at.selectbox(key="run").value)
    captions = app.unescaped(" ".join(c.value for c in at.caption))
    # the page caption: "<Q> of <G> golden queries fail at k=... (<P> missed pairs)"
    q, g, p = map(
        int,
        re.search(r"(\d+) of (\d+) golden queries fail at k=\d+ \((\d+) missed pairs?\)", captions).groups(),
    )
    # the filter pills: "<label> (<n> missed pairs)", one per class present; together every missed pair
    pills = at.multiselect(key="worst_classes").options
    pill_pairs = [int(re.search(r"\((\d+) missed pairs?\)", o).group(1)) for o in pills]
    assert sum(pill_pairs) == p
    # the table (every class selected): one row per missed pair, from q distinct failed queries
    table = app.frame_with(at, "class")
    assert len(table) == p and table["query_id"].nunique() == q
    assert re.search(rf"{p} of {p} missed pairs shown \({q} of {q} failed queries\)", captions), captions
    # the remedy table: per class the missed pairs are the pills' counts; the failed queries per class are at most
    # the failed queries, and at least them together (a query with pairs in two classes counts in both)
    remedy = app.frame_with(at, "remedy")
    by_label = dict(zip(remedy["failure class"], remedy["missed pairs"], strict=True))
    assert [by_label[CLASS_LABELS[c]] for c in diag.class_counts if diag.class_counts[c]] == pill_pairs
    assert remedy["missed pairs"].sum() == p
    assert remedy["failed queries"].max() <= q <= remedy["failed queries"].sum()
    assert (remedy["failed queries"] <= remedy["missed pairs"]).all()
    assert (q, g, p) == (len(diag.failed_queries), diag.n_queries, len(diag.failures))


def test_overview_missed_pairs_are_the_failure_breakdown():
    at = app.demo_app()
    table = app.frame_with(at, "missed pairs").set_index("run")
    table = table.assign(**{c: app.numbers(table[c]) for c in ("missed pairs", "failed queries")})
    b = at.session_state["_bundle"]
    for run in b.run_names:
        d = b.diagnosis(run)
        assert table.at[run, "missed pairs"] == sum(d.class_counts.values())
        assert table.at[run, "failed queries"] <= table.at[run, "missed pairs"]


def test_golden_set_ranks_queries_by_risk_and_compare_runs_tukey():
    at = app.open_demo("golden")
    risk = app.frame_with(at, "risk")
    assert risk["risk_rank"].tolist() == sorted(risk["risk_rank"])
    assert any("ROC AUC" in m.value for m in at.markdown)
    at = app.open_demo("compare", at)
    tukey = app.frame_with(at, "p_tukey")
    n = len(at.session_state["_bundle"].runs)
    assert len(tukey) == n * (n - 1) // 2
    assert "effect size" in app.frame_with(at, "p (Holm)").columns


def test_overview_opens_with_the_findings_of_the_selected_run():
    at = app.open_demo("overview")
    # the first block under the title: the numbered findings, the Analysis' own sentences in its order
    assert at.subheader[0].value == "What to fix first"
    found = at.session_state["_bundle"].analysis.findings(app.DEMO_RUNS[0], k=at.number_input(key="k").value)
    assert len(found) >= 2
    lists = [m.value for m in at.markdown if m.value.startswith("1")]
    assert lists, [m.value[:40] for m in at.markdown]
    raw = lists[0].splitlines()
    # a Markdown ordered list: "1. " unescaped at each line's start (an escaped "1\." runs the items together)
    assert [x.split(" ", 1)[0] for x in raw] == [f"{i}." for i in range(1, len(found) + 1)]
    assert [app.unescaped(x) for x in raw] == [f"{a.rank}. {a.sentence()}" for a in found]
