"""The Python API: diagnose.load / evaluate / Analysis / run_retriever, as a notebook user calls them.

The README's Python section and docs/python.md are executed as written (like test_docs.py keeps the CLI honest);
Analysis is checked against the CLI's own outputs (one pipeline, one schema), with the deterministic keyword encoder where no real
model is needed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import pytest

import diagnose
from diagnose.cli import main
from diagnose.data import Corpus, DataError, Dataset, Qrels, Queries
from diagnose.embed import KeywordEncoder
from diagnose.failures import CLASSES
from diagnose.io.convert import as_qrels
from diagnose.metrics import expand_metrics
from diagnose.stats import Comparison

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_corpus"
ANN = str(DEMO / "runs" / "ann_minilm.trec")
LC = str(DEMO / "runs" / "bm25_langchain.trec")
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_PAGE = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")


class CountingEncoder(KeywordEncoder):
    """The keyword encoder, counting the texts it encodes (to prove what is not recomputed)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoded = 0

    def encode(self, texts, **kwargs):
        self.encoded += len(texts)
        return super().encode(texts, **kwargs)


@pytest.fixture(scope="module")
def demo():
    return diagnose.load(DEMO)


@pytest.fixture
def analysis(demo, tmp_path):
    return diagnose.Analysis(
        demo,
        {"ann": ANN, "lc": LC},
        encoder=KeywordEncoder(),
        cache_dir=tmp_path,
        baselines=("bm25", "dense", "hybrid"),
    )


def _python_section() -> str:
    """The python blocks of the README's Python section, then those of docs/python.md (one process: the second
    Analysis reads the vectors the first one cached)."""
    section = README.split("## Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "README's Python section has no python block"
    page = re.findall(r"```python\n(.*?)```", PYTHON_PAGE.split("\n## ", 1)[0], flags=re.S)
    assert page, "docs/python.md has no python block before its first section"
    return "\n".join(blocks + page)


def test_public_api_comes_first():
    assert diagnose.__all__[:4] == ["load", "evaluate", "Analysis", "run_retriever"]
    for name in diagnose.__all__:
        assert getattr(diagnose, name) is not None
    assert "README" and "## Python" in README


def test_evaluate_imports_no_heavy_package():
    code = (
        "import sys, diagnose\n"
        f"t = diagnose.evaluate({str(DEMO / 'qrels' / 'test.tsv')!r}, {ANN!r}, metrics=['ndcg@10'])\n"
        "assert 0 < t.loc['ann_minilm', 'ndcg@10'] < 1, t\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'streamlit', 'umap', 'sentence_transformers', 'altair', 'numba', 'transformers'))\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_evaluate_takes_paths_records_and_dicts(demo):
    by_path = diagnose.evaluate(DEMO / "qrels" / "test.tsv", ANN, k=[1, 10], metrics=["ndcg", "mrr"])
    assert list(by_path.columns) == ["ndcg@1", "ndcg@10", "mrr"]
    run = diagnose.load(DEMO, runs=[ANN]).runs["ann_minilm"]
    by_record = diagnose.evaluate(demo.qrels, run, k=[1, 10], metrics=["ndcg", "mrr"])
    pd.testing.assert_frame_equal(by_path, by_record)
    # the same run as a plain dict gives the same numbers (ties ordered like trec_eval in both)
    as_dict = {}
    for q, d, s in zip(run.df["query_id"], run.df["doc_id"], run.df["score"], strict=True):
        as_dict.setdefault(q, {})[d] = s
    qrels = {}
    for q, d, g in zip(
        demo.qrels.df["query_id"], demo.qrels.df["doc_id"], demo.qrels.df["relevance"], strict=True
    ):
        qrels.setdefault(q, {})[d] = int(g)
    by_dict = diagnose.evaluate(qrels, as_dict, k=[1, 10], metrics=["ndcg", "mrr"])
    np.testing.assert_allclose(by_dict.to_numpy(), by_record.to_numpy(), rtol=0, atol=1e-12)
    # several runs at once: a dict of names
    both = diagnose.evaluate(demo, {"a": ANN, "b": LC}, metrics=["ndcg@10"])
    assert list(both.index) == ["a", "b"]
    # q1: d1 (grade 1) at rank 1 of 2 -> nDCG@10 = 1, RR = 1
    tiny = diagnose.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.9, "d2": 0.5}}, metrics=["ndcg@10", "mrr"])
    assert tiny.iloc[0].tolist() == [1.0, 1.0]
    # the row of a dict has a name that says so (issue 23: before, a row "run" under the index "run")
    assert list(tiny.index) == ["unnamed run"] and tiny.index.name == "run"


def test_evaluate_refuses_bad_dicts():
    with pytest.raises(DataError, match="grades are integers"):
        diagnose.evaluate({"q1": {"d1": 0.5}}, {"q1": {"d1": 1.0}})
    with pytest.raises(DataError, match="finite"):
        diagnose.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": float("nan")}})


def test_records_have_short_reprs(demo):
    text = repr(demo)
    folder = Path(__file__).resolve().parents[1] / "demo_corpus"
    n_docs, n_queries = (
        sum(1 for line in (folder / name).read_text(encoding="utf-8").splitlines() if line.strip())
        for name in ("corpus.jsonl", "queries.jsonl")
    )
    assert (
        text.startswith(f"Dataset('demo_corpus': {n_docs} documents, {n_queries} queries") and len(text) < 200
    )
    assert repr(demo.corpus).startswith(f"Corpus({n_docs} documents")


def test_analysis_metrics_match_the_cli_json(demo, tmp_path, capsys):
    """Analysis.to_dict() is `diagnose evaluate --format json`: one pipeline, one schema."""
    code = main(
        [
            "evaluate",
            "--data",
            str(DEMO),
            "--run",
            f"ann={ANN}",
            "--run",
            f"lc={LC}",
            "--baseline",
            "bm25",
            "--cache-dir",
            str(tmp_path),
            "--format",
            "json",
        ]
    )
    cli = json.loads(capsys.readouterr().out)
    assert code == 0
    ds = diagnose.load(DEMO, runs=[f"ann={ANN}", f"lc={LC}"])
    a = diagnose.Analysis(ds, baselines=("bm25",), cache_dir=tmp_path)
    assert json.loads(json.dumps(a.to_dict())) == cli
    table = a.metrics()
    assert list(table.index) == ["ann", "lc", "bm25"]
    assert list(table.columns) == expand_metrics(None, [1, 3, 5, 10])
    assert table.loc["bm25", "ndcg@10"] == cli["runs"]["bm25"]["aggregate"]["ndcg@10"]
    # metrics alone never load a model
    assert not a._has("encoder") and not a._has("space")


def test_failures_frame_has_every_key_of_the_failure_json(analysis):
    frame = analysis.failures("ann")
    diag = analysis.diagnosis("ann")
    assert len(frame) == len(diag.failures) > 0
    assert set(diag.failures[0].to_dict()) <= set(frame.columns)
    assert set(frame["class"]) <= set(CLASSES)
    # worst first: the first row is a target the run did not retrieve at all
    assert pd.isna(frame["run_rank"].iloc[0])
    counts = analysis.class_counts()
    assert list(counts.columns) == list(CLASSES)
    assert counts.loc["ann"].sum() == len(frame)


def test_changing_k_or_the_failure_definition_re_encodes_nothing(demo, tmp_path):
    enc = CountingEncoder()
    a = diagnose.Analysis(demo, {"ann": ANN}, encoder=enc, cache_dir=tmp_path)
    d10 = a.diagnosis("ann")
    encoded = enc.encoded
    assert encoded > 0
    d5 = a.diagnosis("ann", k=5)
    recall = a.diagnosis("ann", failure="recall")
    assert enc.encoded == encoded
    assert d5.k == 5 and recall.mode == "recall" and d10.k == 10
    assert len(recall.failures) >= len(d10.failures)
    assert a.diagnosis("ann") is d10  # memoised


def test_inspect_escapes_user_text():
    hostile = '<img src=x onerror="alert(1)">'
    corpus = Corpus(
        pd.DataFrame(
            {
                "doc_id": ["d1", "d2", "d<3>"],
                "title": ["", "", ""],
                "text": [f"password reset {hostile}", "vpn access", "lunch menu"],
            }
        )
    )
    queries = Queries(pd.DataFrame({"query_id": ["q1"], "text": ["forgot password <script>x</script>"]}))
    qrels = Qrels(
        pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": np.array([1], dtype=np.int64)})
    )
    ds = Dataset(qrels=qrels, corpus=corpus, queries=queries)
    a = diagnose.Analysis(
        ds, {"r": {"q1": {"d2": 2.0, "d<3>": 1.0, "d1": 0.5}}}, k=2, encoder=KeywordEncoder()
    )
    view = a.inspect("q1", "r")
    assert view.failed and view.targets[0].failure.doc_id == "d1"
    page = view._repr_html_()
    assert "<script>" not in page and "<img" not in page and "d<3>" not in page
    assert "&lt;script&gt;" in page and "&lt;img" in page and "d&lt;3&gt;" in page
    assert "<mark>password</mark>" in page  # the query term the target contains is marked
    d = view.to_dict()
    assert d["targets"][0]["doc_id"] == "d1" and [r["doc_id"] for r in d["retrieved"]] == ["d2", "d<3>"]
    with pytest.raises(DataError) as err:
        a.inspect("nope", "r")
    assert err.value.param == "query_id"


def test_inspect_bm25_ranks_of_the_retrieved_documents_are_tie_ranges_or_none():
    # query "forgot password": d1 and d3 have the same text, so the same BM25 score s > 0, and nobody scores
    # higher: both hold ranks 1..2. d2 and d4 contain no query term: score 0, no rank (the old rule said
    # 1 + #{score > 0} = 3). The run retrieves d3, d2 (k = 2) and misses the relevant d1.
    corpus = Corpus(
        pd.DataFrame(
            {
                "doc_id": ["d1", "d2", "d3", "d4"],
                "title": "",
                "text": ["password reset", "vpn access", "password reset", "lunch menu"],
            }
        )
    )
    queries = Queries(pd.DataFrame({"query_id": ["q1"], "text": ["forgot password"]}))
    qrels = Qrels(
        pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": np.array([1], dtype=np.int64)})
    )
    ds = Dataset(qrels=qrels, corpus=corpus, queries=queries)
    a = diagnose.Analysis(ds, {"r": {"q1": {"d3": 2.0, "d2": 1.0, "d1": 0.5}}}, k=2, encoder=KeywordEncoder())
    view = a.inspect("q1", "r")
    rows = view.to_dict()["retrieved"]
    assert [(r["doc_id"], r["bm25_rank"], r["bm25_rank_worst"]) for r in rows] == [
        ("d3", 1, 2),
        ("d2", None, None),
    ]
    f = view.targets[0].failure
    assert (f.bm25_rank, f.bm25_rank_worst) == (1, 2)
    assert "<td>#1–2</td>" in view._repr_html_()


def test_compare_has_the_cli_comparison_columns(analysis):
    table = analysis.compare(reference="ann")
    assert list(table.columns) == [f for f in Comparison.__dataclass_fields__]
    assert set(table["run"]) == {"lc", "bm25", "dense", "hybrid"} and set(table["reference"]) == {"ann"}
    assert analysis.query_changes("ann")["lc"]["metric"] == "hit_rate@10"


def test_charts_and_notebook_summary(analysis):
    sim = analysis.similarity("ann")
    assert isinstance(sim, alt.TopLevelMixin)
    sim.to_dict()  # validates against the Vega-Lite schema
    html = analysis._repr_html_()
    assert "ndcg@10" in html and "failed queries" in html
    assert any(c in html for c in CLASSES)
    assert "Analysis('demo_corpus'" in repr(analysis)


def test_map_is_an_altair_chart(analysis):
    chart = analysis.map("ann", cap=500)
    spec = chart.to_dict()
    assert spec["layer"]
    emap = analysis.embedding_map("ann", cap=500)
    assert set(analysis.diagnosis("ann").failed_queries) <= set(emap.points["id"])


def test_parameters_are_checked_and_named(demo):
    for kwargs, param in [
        ({"k": 0}, "k"),
        ({"failure": "precision"}, "failure"),
        ({"depth": -1}, "depth"),
        ({"baselines": ("bm52",)}, "baselines"),
    ]:
        with pytest.raises(DataError) as err:
            diagnose.Analysis(demo, {}, **kwargs)
        assert err.value.param == param
    with pytest.raises(DataError, match="already named 'bm25'"):
        diagnose.Analysis(demo, {"bm25": ANN}, baselines=("bm25",))


def test_cli_names_the_flag_of_a_library_parameter(capsys):
    code = main(["evaluate", "--data", str(DEMO), "--baseline", "bm25", "--depth", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --depth:") and "Traceback" not in err
    code = main(["failures", "--data", str(DEMO), "--run", ANN, "--duplicate-cosine", "-5"])
    err = capsys.readouterr().err
    assert code == 2 and "--duplicate-cosine" in err
    code = main(["failures", "--data", str(DEMO), "--run", ANN, "--seed-threshold", "nan"])
    assert code == 2 and "--seed-threshold" in capsys.readouterr().err
    code = main(["evaluate", "--data", str(DEMO), "--run", ANN, "--fail-under", "ndcg@10=nan"])
    assert code == 2 and "finite" in capsys.readouterr().err


def test_a_live_callable_retriever_reports_latency(demo, tmp_path):
    bm25 = diagnose.Analysis(demo, {}, cache_dir=tmp_path).bm25

    def retriever(text: str) -> list[tuple[str, float]]:
        return bm25.search([text], 20)[0]

    a = diagnose.Analysis(demo, {"live": retriever, "ann": ANN}, cache_dir=tmp_path, baselines=("bm25",))
    assert a.kinds == {"live": "live retriever", "ann": "your run", "bm25": "baseline"}
    table = a.metrics(["recall@10"])
    assert {"latency_p50_ms", "latency_p95_ms", "recall@10_per_ms"} <= set(table.columns)
    assert table.loc["live", "latency_p50_ms"] > 0 and np.isnan(table.loc["ann", "latency_p50_ms"])
    # the callable returns BM25's own top 20: its metrics at 10 equal the BM25 baseline's
    assert table.loc["live", "recall@10"] == pytest.approx(table.loc["bm25", "recall@10"], abs=1e-12)
    latency = a.to_dict()["runs"]["live"]["latency"]
    assert latency["latency_p95_ms"] >= latency["latency_p50_ms"] > 0


@pytest.mark.real_model
def test_the_readme_python_section_runs_as_written(model_cache, monkeypatch, capsys):
    # the run's model_cache (conftest): the demo's vectors are the ones the other real-model tests encode (the
    # cache is keyed by text and model), as on a user's second run. The blocks run in this process, in a namespace
    # of their own (a name they use without importing or defining it fails), from the repository's folder: a
    # subprocess imported torch, sentence-transformers and diagnose again (~10 CPU-s), which the worker has loaded
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(model_cache))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    exec(compile(_python_section(), "README.md, ## Python", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "Dataset('demo_corpus'" in out and "latency_p50_ms" in out


def test_reader_errors_name_the_parameter_and_the_cli_names_the_flag(capsys):
    with pytest.raises(DataError) as err:
        diagnose.load(DEMO, split="dev")
    assert err.value.param == "split" and "--" not in str(err.value)
    assert main(["evaluate", "--data", str(DEMO), "--split", "dev"]) == 2
    assert capsys.readouterr().err.startswith("error: --split: ")


def test_with_qrels_keeps_the_parameters_and_shares_the_corpus_work(demo, tmp_path):
    a = diagnose.Analysis(
        demo,
        {"ann": ANN},
        k=5,
        ks=(1, 5),
        failure="recall",
        depth=50,
        precision="exact",
        encoder=KeywordEncoder(),
        cache_dir=tmp_path,
        baselines=("bm25",),
    )
    before = a.metrics(["recall@5"]).loc["ann", "recall@5"]
    q = demo.qrels.df
    fewer = as_qrels(
        {
            qid: {d: 1 for d in g.doc_id}
            for qid, g in q[q.query_id != q.query_id.iloc[0]].groupby("query_id")
            if (g.relevance > 0).any()
        }
    )
    after = a.with_qrels(fewer)
    assert after is not a and type(after) is type(a) and after.dataset.qrels is fewer
    assert a.dataset.qrels is demo.qrels and a.metrics(["recall@5"]).loc["ann", "recall@5"] == before
    kept = ("k", "ks", "failure", "depth", "precision", "bm25_engine", "cache_dir", "run_names")
    assert {n: getattr(after, n) for n in kept} == {n: getattr(a, n) for n in kept}
    assert after.bm25 is a.bm25 and after.encoder is a.encoder  # built once, over the same corpus and model
    assert after.dataset.corpus is a.dataset.corpus and after.dataset.report is a.dataset.report
    assert len(after.golden) == len(a.golden) - 1
    assert after.per_query("ann", ["recall@5"]).index.tolist() == after.golden
