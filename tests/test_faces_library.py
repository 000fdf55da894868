"""What the faces (CLI, app) take from the library instead of computing it themselves: a reranker judged by
Analysis.rerank, a run added to a data set by Dataset.with_run, live-retriever specs parsed once, per-query deltas,
the calibration with the analysis' own thresholds, the model's label, and one renderer of every CLI format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import diagnose
from diagnose.cli import main
from diagnose.cli.output import Output, emit, frame_output
from diagnose.data import DataError, Dataset, Qrels, Run
from diagnose.embed import KeywordEncoder
from diagnose.failures import Thresholds
from diagnose.retrievers import parse_retriever_spec

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
ANN = str(DEMO / "runs" / "ann_minilm.trec")
LC = str(DEMO / "runs" / "bm25_langchain.trec")

QRELS = Qrels(
    pd.DataFrame(
        {"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "relevance": np.array([1, 1], dtype=np.int64)}
    )
)


def run(name: str, lists: dict[str, list[str]]) -> Run:
    return Run.from_ranked_lists(
        name, {q: [(d, 10.0 - i) for i, d in enumerate(ds)] for q, ds in lists.items()}
    )


# candidates: q1 finds a at rank 2, q2 finds b at rank 1; reranked swaps both lists.
CANDS = run("cands", {"q1": ["x", "a"], "q2": ["b", "y"]})
RERANKED = run("reranked", {"q1": ["a", "x"], "q2": ["y", "b"]})


def test_rerank_by_run_name_or_run_object():
    analysis = diagnose.Analysis(Dataset(QRELS), {"cands": CANDS, "reranked": RERANKED}, k=1)
    for before, after in (("cands", "reranked"), (CANDS, RERANKED), ("cands", RERANKED)):
        rep = analysis.rerank(before, after, depth=2)
        # ceiling: recall@2 of the candidates = (1 + 1) / 2; hit_rate@1: before q2 only (0.5), after q1 only (0.5)
        assert rep.ceiling == 1.0 and rep.k == 1 and rep.depth == 2
        assert rep.before["hit_rate@1"] == rep.after["hit_rate@1"] == 0.5
        assert rep.recovered == ["q1"] and rep.introduced == ["q2"]
        # mrr: before (1/2 + 1) / 2 = 0.75, after (1 + 1/2) / 2 = 0.75
        assert rep.before["mrr"] == pytest.approx(0.75) and rep.after["mrr"] == pytest.approx(0.75)


def test_rerank_needs_exactly_one_reranker_and_a_known_run():
    analysis = diagnose.Analysis(Dataset(QRELS), {"cands": CANDS}, k=1)
    with pytest.raises(DataError) as e:
        analysis.rerank("cands")
    assert e.value.param == "reranked"
    with pytest.raises(DataError) as e:
        analysis.rerank("cands", RERANKED, cross_encoder="some/model")
    assert e.value.param == "reranked"
    with pytest.raises(DataError) as e:
        analysis.rerank("nope", RERANKED)
    assert e.value.param == "run"
    with pytest.raises(DataError) as e:
        analysis.rerank("cands", RERANKED, depth=0)
    assert e.value.param == "depth"


def test_with_run_adds_a_run_without_changing_the_data_set():
    ds = Dataset(QRELS, runs={"cands": CANDS})
    first = ds.with_run(RERANKED, first=True)
    last = ds.with_run(RERANKED)
    assert list(first.runs) == ["reranked", "cands"] and list(last.runs) == ["cands", "reranked"]
    assert list(ds.runs) == ["cands"]  # the original is untouched
    assert first.report is ds.report and first.qrels is ds.qrels  # shared: warnings land in one report
    with pytest.raises(DataError) as e:
        ds.with_run(run("cands", {"q1": ["a"]}))
    assert e.value.param == "run" and "'cands'" in str(e.value)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("prod=my_rag:retriever", ("prod", "my_rag:retriever")),
        (" prod = a/b.py:make ", ("prod", "a/b.py:make")),
    ],
)
def test_retriever_spec_is_a_name_and_a_target(spec, expected):
    assert parse_retriever_spec(spec) == expected


@pytest.mark.parametrize("spec", ["live", "=m:a", "live=module", "  =:"])
def test_a_bad_retriever_spec_names_the_parameter(spec):
    with pytest.raises(DataError) as e:
        parse_retriever_spec(spec)
    assert e.value.param == "retriever" and "NAME=module:attr" in str(e.value) and repr(spec) in str(e.value)


def test_the_cli_and_the_app_show_one_retriever_spec_message(capsys, monkeypatch):
    st = pytest.importorskip("streamlit")
    assert st
    from diagnose.ui import settings

    with pytest.raises(DataError) as lib:
        parse_retriever_spec("live")
    assert main(["evaluate", "--qrels", "x.tsv", "--retriever", "live"]) == 2
    assert capsys.readouterr().err.strip() == f"error: --retriever: {lib.value}"
    monkeypatch.setattr("sys.argv", ["app.py"])
    monkeypatch.setenv(settings.RETRIEVERS_ENV, "live")
    with pytest.raises(DataError) as app:
        settings.retriever_specs()
    assert str(app.value) == f"--retriever (or {settings.RETRIEVERS_ENV}): {lib.value}"


def test_query_deltas_and_the_changes_built_on_them():
    ref = run("ref", {"q1": ["a"], "q2": ["x", "b"]})
    new = run("new", {"q1": ["x"], "q2": ["b"]})
    analysis = diagnose.Analysis(Dataset(QRELS), {"ref": ref, "new": new}, k=1)
    # hit_rate@1: ref q1 1, q2 0; new q1 0, q2 1 -> q1 broken, q2 fixed
    d = analysis.query_deltas("new").set_index("query_id")
    assert d.loc["q1", "change"] == "broken" and d.loc["q2", "change"] == "fixed"
    assert analysis.query_changes() == {"new": {"metric": "hit_rate@1", "fixed": ["q2"], "broken": ["q1"]}}
    # mrr: ref q1 1, q2 1/2 (b at rank 2); new q1 0 (a missed), q2 1 -> q1 broken by 1, q2 better by 0.5
    m = analysis.query_deltas("new", "ref", "mrr").set_index("query_id")
    assert m.loc["q2", "change"] == "better" and m.loc["q2", "delta"] == pytest.approx(0.5)
    assert m.loc["q1", "change"] == "broken" and m.loc["q1", "delta"] == pytest.approx(-1.0)
    with pytest.raises(DataError) as e:
        analysis.query_deltas("new", metric="ndcg")  # a family at every cutoff, not one metric
    assert e.value.param == "metric"


def test_calibration_uses_the_analysis_thresholds(tmp_path):
    ds = diagnose.load(DEMO)
    analysis = diagnose.Analysis(
        ds,
        {"ann": ANN},
        encoder=KeywordEncoder(),
        cache_dir=tmp_path,
        thresholds=Thresholds(calibration_percentile=50.0),
    )
    cal = analysis.calibration("ann")
    assert cal.percentile == 50.0 and not cal.fallback
    hits = analysis.similarity_frame("ann").query("outcome == 'hit'")["cosine"]
    assert cal.n_pairs == len(hits) and cal.calibrated == pytest.approx(float(np.median(hits)), abs=1e-6)
    assert cal == analysis.diagnosis("ann").calibration  # what the page shows is what the diagnosis used
    strict = diagnose.Analysis(
        ds,
        {"ann": ANN},
        encoder=KeywordEncoder(),
        cache_dir=tmp_path,
        thresholds=Thresholds(seed_cosine=0.5, min_calibration_pairs=10**6),
    )
    fallback = strict.calibration("ann", space=analysis.space)
    assert fallback.fallback and fallback.calibrated == 0.5  # too few hits: the analysis' own seed, not 0.75


def test_model_label_names_precomputed_vector_files_even_beside_an_encoder():
    ds = diagnose.load(DEMO)
    emb = {"doc": "vectors/docs.npy", "query": "vectors/queries.parquet", "doc_ids": "vectors/ids.txt"}
    analysis = diagnose.Analysis(ds, {"ann": ANN}, encoder=KeywordEncoder(), embeddings=emb)
    assert analysis.model_label == "precomputed vectors (docs.npy, queries.parquet)"
    plain = diagnose.Analysis(ds, {"ann": ANN}, encoder=KeywordEncoder(), model="my/model")
    assert plain.model == "my/model" and plain.model_label == KeywordEncoder().name


def test_emit_writes_each_format_one_way(capsys):
    frame = pd.DataFrame({"run": ["a", "b"], "score": [1 / 3, 2.0]})
    result = frame_output(frame, lambda: {"rows": frame.to_dict(orient="records")})
    emit(result, "csv")
    assert capsys.readouterr().out == "run,score\na,0.333333\nb,2.000000\n"  # no index, 6 decimals
    emit(result, "json")
    assert json.loads(capsys.readouterr().out) == {
        "rows": [{"run": "a", "score": 1 / 3}, {"run": "b", "score": 2.0}]
    }
    emit(result, "table")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["run", "score"] and [ln.split()[0] for ln in lines[-2:]] == ["a", "b"]
    emit(
        Output(
            table=lambda: "t",
            json=lambda: {"x": float("nan")},
            csv=lambda: "x\n1\n",
            markdown=lambda: "| m |",
        ),
        "json",
    )
    assert json.loads(capsys.readouterr().out) == {"x": None}  # NaN written as null, always valid JSON
    for fmt, out in (("csv", "x\n1\n"), ("markdown", "| m |\n"), ("table", "t\n")):
        emit(Output(table=lambda: "t", json=dict, csv=lambda: "x\n1\n", markdown=lambda: "| m |"), fmt)
        assert capsys.readouterr().out == out


def test_compare_to_puts_the_reference_first_without_rewriting_the_loaded_runs(capsys):
    code = main(
        [
            "evaluate",
            "--data",
            str(DEMO),
            "--run",
            f"lc={LC}",
            "--compare-to",
            f"ref={ANN}",
            "--format",
            "json",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert list(payload["runs"]) == ["ref", "lc"] and payload["reference"] == "ref"
