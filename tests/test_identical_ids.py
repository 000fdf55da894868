"""Queries that are documents (BEIR's ArguAna, Quora, ...): ``ignore_identical_ids`` drops a retrieved document whose
id is the query's before scoring, the next ones moving up (MTEB's ``ignore_identical_ids``, Pyserini's
``--remove-query``); the warning when it is off; copies of a query's text in its top k."""

from __future__ import annotations

import json
import math

import app_testing as app
import numpy as np
import pytest
import pytrec_eval

import diagnose
from diagnose.analysis import Analysis
from diagnose.cli import main
from diagnose.data import ValidationReport
from diagnose.embed import KeywordEncoder
from diagnose.io import read_run
from diagnose.io.convert import as_run
from diagnose.metrics.identical import (
    SELF_RETRIEVAL_CODE,
    drop_identical_ids,
    self_retrieving_queries,
    warn_self_retrieval,
)

# An argument collection: each query a1..a4 is also a document under its own id (same text); its relevant document
# is the counter-argument c1..c4; a3-copy is query a3's text under another id; x1, x2 are unrelated.
DOCS = {
    "a1": "solar power cuts carbon emissions",
    "c1": "solar farms destroy desert habitats",
    "a2": "nuclear energy is safe and clean",
    "c2": "nuclear waste storage lasts millennia",
    "a3": "school uniforms reduce bullying",
    "a3-copy": "school uniforms reduce bullying",
    "c3": "uniforms stifle student expression at school",
    "a4": "voting should be compulsory",
    "c4": "compulsory voting forces uninformed ballots",
    "x1": "the weather today feels mild",
    "x2": "cats sleep most of the day",
}
QUERIES = {q: DOCS[q] for q in ("a1", "a2", "a3", "a4")}
QRELS = {q: {"c" + q[1]: 1} for q in QUERIES}
# every query retrieves itself; a4 not first (rank 2): its later documents move up, the earlier one stays
RUN = {
    "a1": [("a1", 9.0), ("c1", 8.0), ("x1", 7.0)],
    "a2": [("a2", 9.0), ("x1", 8.0), ("c2", 7.0)],
    "a3": [("a3", 9.0), ("a3-copy", 8.0), ("c3", 7.0), ("x2", 6.0)],
    "a4": [("x2", 9.0), ("a4", 8.0), ("x1", 7.0), ("c4", 6.0)],
}
RUN_DICT = {q: dict(items) for q, items in RUN.items()}


@pytest.fixture
def beir(tmp_path):
    """The collection as a BEIR folder with the run as a TREC file (read as Arrow by the fast reader)."""
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in DOCS.items())
    )
    (tmp_path / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items())
    )
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t{g}\n" for q, j in QRELS.items() for d, g in j.items())
    )
    (tmp_path / "run.trec").write_text(
        "".join(
            f"{q} Q0 {d} {r} {s} r\n" for q, items in RUN.items() for r, (d, s) in enumerate(items, start=1)
        )
    )
    return tmp_path


def _pytrec(run: dict[str, list[tuple[str, float]]], measures: set[str]) -> dict[str, float]:
    """pytrec_eval's means over the queries, on the run with every document whose id is the query's removed from
    the results dict (MTEB's way)."""
    results = {q: {d: s for d, s in items if d != q} for q, items in run.items()}
    per_query = pytrec_eval.RelevanceEvaluator(QRELS, measures).evaluate(results)
    return {m: float(np.mean([v[m] for v in per_query.values()])) for m in next(iter(per_query.values()))}


def test_drop_moves_the_next_documents_up_in_both_table_kinds(beir):
    for run in (read_run(beir / "run.trec", name="r"), as_run(RUN_DICT, name="r")):  # Arrow, then pandas
        dropped = drop_identical_ids(run)
        lists = {q: list(zip(g["doc_id"], g["rank"], strict=True)) for q, g in dropped.df.groupby("query_id")}
        assert lists["a4"] == [("x2", 1), ("x1", 2), ("c4", 3)]  # x2 stays first, x1 and c4 move up one
        assert lists["a1"] == [("c1", 1), ("x1", 2)]
        assert lists["a3"] == [("a3-copy", 1), ("c3", 2), ("x2", 3)]  # another id with the same text stays
        assert len(dropped) == 14 - 4  # 3 + 3 + 4 + 4 rows, one per query dropped
        cut = drop_identical_ids(run, depth=1)  # searched one deeper, cut back to depth
        assert sorted(zip(cut.df["query_id"], cut.df["doc_id"], strict=True)) == [
            ("a1", "c1"), ("a2", "x1"), ("a3", "a3-copy"), ("a4", "x2"),
        ]  # fmt: skip
    clean = as_run({"q": {"d": 1.0}}, name="c")
    assert drop_identical_ids(clean) is clean


def test_published_numbers_reproduce_with_the_option(beir):
    ds = diagnose.load(beir)
    on = Analysis(ds, {"r": str(beir / "run.trec")}, ignore_identical_ids=True, ks=[1, 2, 10, 100])
    got = on.metrics(["ndcg@10", "mrr", "map", "recall@100", "hit_rate@1"]).loc["r"]
    # the relevant document's rank once the query is dropped: a1 1, a2 2, a3 2, a4 3 (was 4)
    # nDCG@10 = (1 + 1/log2(3) + 1/log2(3) + 1/log2(4)) / 4 = (1 + 0.63093 + 0.63093 + 0.5) / 4 = 0.69047
    assert got["ndcg@10"] == pytest.approx((1 + 2 / math.log2(3) + 0.5) / 4)
    assert got["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 2 + 1 / 3) / 4)  # 0.58333
    assert got["hit_rate@1"] == pytest.approx(1 / 4)  # a1 only
    ref = _pytrec(RUN, {"ndcg_cut.10", "recip_rank", "map", "recall.100"})
    assert got["ndcg@10"] == pytest.approx(ref["ndcg_cut_10"], abs=1e-12)
    assert got["mrr"] == pytest.approx(ref["recip_rank"], abs=1e-12)
    assert got["map"] == pytest.approx(ref["map"], abs=1e-12)
    assert got["recall@100"] == pytest.approx(ref["recall_100"], abs=1e-12)
    # the light API too
    api = diagnose.evaluate(QRELS, {"r": RUN_DICT}, metrics=["ndcg@10", "mrr"], ignore_identical_ids=True)
    assert api.loc["r", "ndcg@10"] == pytest.approx(ref["ndcg_cut_10"], abs=1e-12)
    # off: the query's own document fills rank 1; ranks 2, 3, 3, 4
    off = Analysis(diagnose.load(beir), {"r": str(beir / "run.trec")}).metrics(["ndcg@10"]).loc["r"]
    assert off["ndcg@10"] == pytest.approx((1 / math.log2(3) + 0.5 + 0.5 + 1 / math.log2(5)) / 4)  # 0.51540


def test_the_warning_names_the_count_when_the_option_is_off(beir):
    ds = diagnose.load(beir)
    Analysis(ds, {"r": str(beir / "run.trec")}).user_runs()
    (problem,) = ds.report.by_code(SELF_RETRIEVAL_CODE)
    assert problem.count == 4 and problem.message.startswith("4 of 4 golden queries retrieve themselves")
    assert "--ignore-identical-ids" in problem.message and problem.severity == "warning"
    quiet = diagnose.load(beir)
    Analysis(quiet, {"r": str(beir / "run.trec")}, ignore_identical_ids=True).user_runs()
    assert quiet.report.by_code(SELF_RETRIEVAL_CODE) == []


def test_the_warning_threshold_is_ten_percent_of_the_golden_queries():
    run = as_run({"q0": {"q0": 1.0, "d": 0.5}, **{f"q{i}": {"d": 1.0} for i in range(1, 20)}}, name="r")
    assert self_retrieving_queries(run, [f"q{i}" for i in range(20)]) == ["q0"]
    for golden, fires in ((10, True), (11, False), (20, False)):  # 1 of 10 = 10%: fires; 1 of 11 < 10%: not
        report = ValidationReport()
        warn_self_retrieval(report, run, [f"q{i}" for i in range(golden)])
        assert bool(report.by_code(SELF_RETRIEVAL_CODE)) is fires
    report = ValidationReport()
    for _ in range(2):  # once per run and count, however often the run is looked at
        warn_self_retrieval(report, run, [f"q{i}" for i in range(10)])
    assert len(report.by_code(SELF_RETRIEVAL_CODE)) == 1


def test_the_option_reaches_every_baseline(beir):
    ds = diagnose.load(beir)
    kw = dict(
        encoder=KeywordEncoder(), baselines=("bm25", "dense", "hybrid"), depth=3, cache_dir=beir / "cache"
    )
    on = Analysis(ds, {}, ignore_identical_ids=True, **kw)
    for name, run in on.runs.items():
        df = run.df
        assert not (df["query_id"] == df["doc_id"]).any(), name
        for q, g in df.groupby("query_id"):
            assert list(g["rank"]) == list(range(1, len(g) + 1)), (name, q)
    # dense search scores every document: searched 4 deep, the query dropped, 3 left for every query
    assert on.runs["dense"].df.groupby("query_id").size().tolist() == [3, 3, 3, 3]
    # the model comparison's exact dense run is the dense baseline's (same encoder, depth and convention)
    (model,) = on.models([on.encoder], n_resamples=10).results
    assert model.evaluation.aggregate["ndcg@10"] == pytest.approx(
        on.metrics(["ndcg@10"]).loc["dense", "ndcg@10"]
    )
    assert model.evaluation.aggregate["ndcg@10"] != pytest.approx(
        Analysis(diagnose.load(beir), {}, **kw).metrics(["ndcg@10"]).loc["dense", "ndcg@10"]
    )  # and it is not the score with the query's own document in the list
    off_ds = diagnose.load(beir)
    off = Analysis(off_ds, {}, **kw)
    assert set(self_retrieving_queries(off.runs["bm25"], QUERIES)) == set(QUERIES)  # each finds itself
    assert {p.message.split(" in the run ")[1].split(":")[0] for p in off_ds.report.by_code(SELF_RETRIEVAL_CODE)} == {
        "'bm25'", "'dense'", "'hybrid'",
    }  # fmt: skip


@pytest.mark.parametrize(
    "kinds", [None, {"r": "dense"}], ids=["ranks-with-the-baselines", "ranks-by-the-diagnosis"]
)
def test_the_diagnosis_reads_the_run_and_the_corpus_without_the_query(beir, kinds):
    kw = dict(encoder=KeywordEncoder(), k=2, cache_dir=beir / "cache", kinds=kinds)
    on = Analysis(diagnose.load(beir), {"r": str(beir / "run.trec")}, ignore_identical_ids=True, **kw)
    # at k=2 with the query dropped only a4 fails (c4 now at rank 3, was 4)
    (f,) = on.diagnosis("r").failures
    assert (f.query_id, f.doc_id, f.run_rank) == ("a4", "c4", 3)
    # over the whole corpus, document a4 (the query's own text: cosine 1, every query term) is first and c4 (two of
    # the query's words) second; without a4, c4 is first by both
    assert (f.dense_rank, f.bm25_rank) == (1, 1)
    off = Analysis(diagnose.load(beir), {"r": str(beir / "run.trec")}, **kw)
    failures = {f.query_id: f for f in off.diagnosis("r").failures}
    assert sorted(failures) == ["a2", "a3", "a4"]
    assert (failures["a4"].run_rank, failures["a4"].dense_rank, failures["a4"].bm25_rank) == (4, 2, 2)


def test_a_copy_of_the_query_in_its_top_k_is_a_golden_set_finding(beir):
    a = Analysis(diagnose.load(beir), {"r": str(beir / "run.trec")}, encoder=KeywordEncoder(), k=2,
                 cache_dir=beir / "cache", ignore_identical_ids=True)  # fmt: skip
    copies = a.label_noise("r").query_copies
    # a3-copy: the same text as query a3 (cosine 1 under the keyword encoder); a3 itself is gone with the option
    assert copies[["query_id", "doc_id", "rank", "same_text"]].values.tolist() == [["a3", "a3-copy", 1, True]]
    assert copies["cosine"].iloc[0] == pytest.approx(1.0)
    noise = a.label_noise("r").to_dict()
    assert noise["queries_with_copies"] == 1 and noise["query_copies"][0]["doc_id"] == "a3-copy"
    # without the option the query's own document is not counted as a copy (the warning covers it)
    off = Analysis(diagnose.load(beir), {"r": str(beir / "run.trec")}, encoder=KeywordEncoder(), k=2,
                   cache_dir=beir / "cache")  # fmt: skip
    assert off.label_noise("r").query_copies["doc_id"].tolist() == ["a3-copy"]


def _vectors(beir):
    """The keyword encoder's vectors as the user's own precomputed files (the CLI then loads no model)."""
    enc = KeywordEncoder()
    np.save(beir / "docs.npy", np.asarray(enc.encode(list(DOCS.values())), dtype=np.float32))
    np.save(beir / "queries.npy", np.asarray(enc.encode(list(QUERIES.values())), dtype=np.float32))
    (beir / "doc_ids.txt").write_text("\n".join(DOCS) + "\n")
    (beir / "query_ids.txt").write_text("\n".join(QUERIES) + "\n")
    return [
        "--doc-embeddings", beir / "docs.npy", "--doc-ids", beir / "doc_ids.txt",
        "--query-embeddings", beir / "queries.npy", "--query-ids", beir / "query_ids.txt",
    ]  # fmt: skip


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_the_cli_flag(beir, capsys):
    args = ["evaluate", "--data", beir, "--run", f"r={beir / 'run.trec'}", "--metrics", "ndcg@10,mrr"]
    out, _ = _cli(capsys, *args, "--ignore-identical-ids", "--format", "json")
    payload = json.loads(out)
    ref = _pytrec(RUN, {"ndcg_cut.10", "recip_rank"})
    assert payload["runs"]["r"]["aggregate"]["ndcg@10"] == pytest.approx(ref["ndcg_cut_10"], abs=1e-12)
    assert not [w for w in payload["warnings"] if w["code"] == SELF_RETRIEVAL_CODE]
    out, _ = _cli(capsys, *args, "--format", "json")  # off: the JSON warns, with the count
    (w,) = [w for w in json.loads(out)["warnings"] if w["code"] == SELF_RETRIEVAL_CODE]
    assert w["count"] == 4
    _, err = _cli(capsys, *args)  # and the text output on stderr
    assert "4 of 4 golden queries retrieve themselves" in err
    # failures: the run read without the query, the query copy reported under its new key
    out, _ = _cli(capsys, "failures", "--data", beir, "--run", beir / "run.trec", "--k", "2",
                  "--ignore-identical-ids", "--format", "json", *_vectors(beir))  # fmt: skip
    payload = json.loads(out)
    assert [(f["query_id"], f["run_rank"]) for f in payload["failures"]] == [("a4", 3)]
    assert payload["label_noise"]["queries_with_copies"] == 1


@pytest.mark.usefixtures("keyword_encoder")
def test_the_app_sidebar_box_feeds_the_analysis(beir, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_DATA_ROOT", str(beir))
    (beir / "runs").mkdir()
    (beir / "run.trec").rename(beir / "runs" / "r.trec")
    at = app.demo_app()
    at.selectbox(key="src_kind").set_value("beir").run()
    at.text_input(key="beir_dir").input(str(beir)).run()
    assert at.session_state["_bundle"].analysis.ignore_identical_ids is False
    at.checkbox(key="ignore_identical_ids").check().run()
    app.assert_clean(at)
    analysis = at.session_state["_bundle"].analysis
    assert analysis.ignore_identical_ids is True
    # the hand value of test_published_numbers_reproduce_with_the_option
    assert analysis.metrics(["ndcg@10"]).loc["r", "ndcg@10"] == pytest.approx(
        (1 + 2 / math.log2(3) + 0.5) / 4
    )
    at.switch_page(app.PAGES.format("golden")).run()  # the query copy of a3 on the Golden set page
    app.assert_clean(at)
    assert any(s.value.startswith("Copies of the query in its top") for s in at.subheader)
    assert "a3-copy" in app.frame_with(at, "same_text")["doc_id"].tolist()


def test_the_ann_frontier_compares_like_with_like(beir):
    pytest.importorskip("faiss")
    from diagnose.whatif.ann import AnnSetting

    # 4,096 buckets: no two of these words share one (at the default 256, a word of a1 meets one of a3's)
    a = Analysis(diagnose.load(beir), {}, encoder=KeywordEncoder(4096), baselines=("dense",), depth=1,
                 cache_dir=beir / "cache", ignore_identical_ids=True)  # fmt: skip
    hnsw = AnnSetting("hnsw", {"M": 16, "efConstruction": 40, "efSearch": 64})
    (point,) = a.ann_frontier(k=1, settings=[hnsw]).settings
    # without its own document each query's nearest is unique: c1 (shares "solar"), c2 ("nuclear"), a3-copy (its
    # text), c4 ("voting", "compulsory"); HNSW over 11 documents finds them, so it agrees with exact search (with
    # the query's own document in the index's lists it would hold the query, not these)
    assert point.recall_vs_exact == 1.0
    assert not (point.run.df["query_id"] == point.run.df["doc_id"]).any()


def test_the_judge_queue_does_not_ask_to_judge_the_query_itself(beir):
    from diagnose.judging import judge_queue

    kw = dict(encoder=KeywordEncoder(), cache_dir=beir / "cache", depth=3)
    on = judge_queue(
        Analysis(diagnose.load(beir), {"r": str(beir / "run.trec")}, ignore_identical_ids=True, **kw)
    )
    off = judge_queue(Analysis(diagnose.load(beir), {"r": str(beir / "run.trec")}, **kw))
    same = {q for q, d in zip(off["query_id"], off["doc_id"], strict=True) if q == d}
    assert same == set(QUERIES)  # every query's own document is unjudged and in the top k of some run
    assert not (on["query_id"] == on["doc_id"]).any()


def test_the_chunking_sweep_leaves_the_query_out_like_its_baseline(beir):
    pytest.importorskip("semantic_text_splitter")
    a = Analysis(diagnose.load(beir), {}, encoder=KeywordEncoder(4096), cache_dir=beir / "cache",
                 ignore_identical_ids=True)  # fmt: skip
    sw = a.chunking([100], [0], k=1)  # every document fits: one chunk each, its whole text
    (p,) = sw.configurations
    # so the chunks rank as the documents as they are (the dense baseline, without the query's own document): at
    # k=1 c1, c2, a3-copy, c4 (test_the_ann_frontier_compares_like_with_like): hit rate 3/4 (a3-copy is no answer)
    assert p.metrics == pytest.approx(sw.current.metrics)
    assert sw.current.metrics["hit_rate@1"] == pytest.approx(3 / 4)
