"""The run's kind: inferred from top-k overlaps (hand arithmetic), given, and read by the rules, the sentences, the
recommendations and the remedies."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_failures import CAL, K, outranked_world

import diagnose
from diagnose.cli import main
from diagnose.data import Corpus, DataError, Dataset, Qrels, Queries, Run
from diagnose.embed import KeywordEncoder
from diagnose.failures import (
    CLASS_BY_ID,
    RECOMMENDATIONS,
    EvidenceSources,
    PairEvidence,
    RunKind,
    classify,
    diagnose_run,
    infer_run_kind,
    recommendation,
)
from diagnose.failures.kind import parse_kind_arg
from diagnose.whatif.remedies import prove_remedies, remedy_for


def lists(name: str, ranked: dict[str, list[str]]) -> Run:
    return Run.from_ranked_lists(
        name, {q: [(d, 10.0 - i) for i, d in enumerate(ds)] for q, ds in ranked.items()}
    )


BM25 = lists("bm25", {"q1": ["a", "b", "c", "d"], "q2": ["e", "f", "g", "h"]})
DENSE = lists("dense", {"q1": ["w", "x", "y", "a"], "q2": ["z", "e", "u", "v"]})


@pytest.mark.parametrize(
    ("ranked", "kind", "ob", "od"),
    [
        # q1 top 4 {a,b,c,x}: 3 of 4 in BM25's, 2 ({a,x}) in dense's; q2 {e,f,g,h}: 4/4 and 1/4 ({e})
        # overlap_bm25 = (0.75 + 1) / 2 = 0.875, overlap_dense = (0.5 + 0.25) / 2 = 0.375; gap 0.5 >= 0.15: lexical
        ({"q1": ["a", "b", "c", "x"], "q2": ["e", "f", "g", "h"]}, "lexical", 0.875, 0.375),
        # q1 {w,x,y,b}: BM25 1/4, dense 3/4; q2 {z,u,v,f}: 1/4, 3/4 -> 0.25 vs 0.75: dense
        ({"q1": ["w", "x", "y", "b"], "q2": ["z", "u", "v", "f"]}, "dense", 0.25, 0.75),
        # q1 {a,b,c,w}: BM25 3/4, dense {a,w} 2/4; q2 {e,z,u,f}: BM25 {e,f} 2/4, dense {e,z,u} 3/4
        # -> 0.625 vs 0.625, both >= 0.4 and gap 0 < 0.15: hybrid
        ({"q1": ["a", "b", "c", "w"], "q2": ["e", "z", "u", "f"]}, "hybrid", 0.625, 0.625),
        # q1 {m,n,o,a}: 1/4 each; q2 {p,r,s,t}: 0, 0 -> 0.125 vs 0.125, both < 0.4: unknown
        ({"q1": ["m", "n", "o", "a"], "q2": ["p", "r", "s", "t"]}, "unknown", 0.125, 0.125),
    ],
)
def test_infer_run_kind_from_top_k_overlaps(ranked, kind, ob, od):
    got = infer_run_kind(lists("mine", ranked), BM25, DENSE, ["q1", "q2"], 4)
    assert (got.kind, got.source, got.n_queries) == (kind, "inferred", 2)
    assert got.overlap_bm25 == pytest.approx(ob) and got.overlap_dense == pytest.approx(od)
    assert f"{ob:.0%}" in got.sentence() and got.to_dict()["kind"] == kind


def test_a_short_list_is_compared_on_what_it_has_and_an_empty_run_is_unknown():
    # q1's run has 2 documents {a, b}, both in BM25's top 4: 2 / min(2, 4) = 1; dense {a}: 1/2
    got = infer_run_kind(lists("mine", {"q1": ["a", "b"]}), BM25, DENSE, ["q1", "q2"], 4)
    assert (got.overlap_bm25, got.overlap_dense, got.n_queries) == (1.0, 0.5, 1) and got.kind == "lexical"
    none = infer_run_kind(lists("mine", {"q9": ["a"]}), BM25, DENSE, ["q1", "q2"], 4)
    assert none.kind == "unknown" and none.overlap_bm25 is None


def test_kind_arguments_are_checked():
    assert parse_kind_arg("mine=lexical") == ("mine", "lexical")
    assert parse_kind_arg("a=b=dense") == ("a=b", "dense")  # the last '=' splits: run names may hold '='
    for bad in ("lexical", "mine=sparse", "=dense"):
        with pytest.raises(DataError) as err:
            parse_kind_arg(bad)
        assert err.value.param == "run_kind"


def test_lexical_index_gap_reads_bm25_and_vocabulary_mismatch_mirrors_the_dense_rule():
    common = dict(run_rank=None, k=10, calibrated=0.5)
    # BM25 ranks it #3, exact dense #40, cos 0.2: a dense run's index gap needs dense within k -> not one
    # (vocabulary_mismatch: dense low and BM25 has it); a lexical run's exact search of its kind is BM25 -> index_gap
    ev = dict(dense_rank=40, bm25_rank=3, cosine=0.2, overlap=0.5, weight_share=0.5)
    assert classify(PairEvidence(**common, **ev)) == "vocabulary_mismatch"
    assert classify(PairEvidence(**common, **ev, kind="lexical")) == "index_gap"
    assert (
        classify(PairEvidence(**common, **ev, kind="hybrid")) == "index_gap"
    )  # either exact search within k
    # dense #2, no BM25 rank, overlap 0, cos 0.7: a dense run's index gap; for a lexical run the words differ while
    # dense search has it (2 <= 3k = 30) -> vocabulary_mismatch (dense retrieval would find it)
    ev = dict(dense_rank=2, bm25_rank=None, cosine=0.7, overlap=0.0, weight_share=0.0)
    assert classify(PairEvidence(**common, **ev)) == "index_gap"
    assert classify(PairEvidence(**common, **ev, kind="lexical")) == "vocabulary_mismatch"
    # the lexical rule is the dense rule's mirror: its own signal (BM25) misses the target and the target holds few
    # of the query's words (0% < min_overlap 20%), wherever dense search ranks it (dense ties 29..31 or #40, beyond
    # 3k = 30: once semantic_gap, which hid the injected lexical faults, issue 35); the cosine does not enter it
    ev = dict(bm25_rank=None, cosine=0.2, overlap=0.0, weight_share=0.0)
    for dense in (dict(dense_rank=29, dense_rank_worst=31), dict(dense_rank=40)):
        assert classify(PairEvidence(**common, **ev, **dense, kind="lexical")) == "vocabulary_mismatch"
    # the words are there (50% >= 20%) and neither BM25 nor dense search ranks it within k: semantic_gap
    ev = dict(dense_rank=40, bm25_rank=None, bm25_score=0.0, cosine=0.2, overlap=0.5, weight_share=0.5)
    assert classify(PairEvidence(**common, **ev, kind="lexical")) == "semantic_gap"
    # a dense run calls dense #40 with few words vocabulary_mismatch (its signal is low and the words differ)
    ev = dict(dense_rank=40, bm25_rank=None, cosine=0.2, overlap=0.0, weight_share=0.0)
    assert classify(PairEvidence(**common, **ev)) == "vocabulary_mismatch"


def test_recommendations_and_remedies_follow_the_kind():
    assert recommendation("vocabulary_mismatch") == RECOMMENDATIONS["vocabulary_mismatch"]
    lexical = recommendation("vocabulary_mismatch", "lexical")
    assert lexical != RECOMMENDATIONS["vocabulary_mismatch"] and "dense" in lexical
    assert "analyzer" in recommendation("index_gap", "lexical")
    assert recommendation("near_miss", "lexical") == RECOMMENDATIONS["near_miss"]
    assert (
        remedy_for("vocabulary_mismatch") == CLASS_BY_ID["vocabulary_mismatch"].remedy
    )  # hybrid of the run and BM25
    assert remedy_for("vocabulary_mismatch", "lexical").id == "dense"
    assert remedy_for("index_gap", "lexical").id == "bm25"
    assert remedy_for("index_gap", "hybrid").id == "hybrid_baseline"


def test_a_lexical_diagnosis_words_its_classes_for_a_lexical_run():
    # q = (1,0,0); t = (0.6,0.8,0): cos 0.6 >= 0.5 calibrated; a, b, c ~1 so dense rank 4 > k = 2. BM25 scores t 0
    # (no shared word: "credential recovery" vs "forgot password"), overlap 0. Lexical run: BM25 misses it, the words
    # differ, dense search has it within 3k = 6 -> vocabulary_mismatch, worded for a lexical run.
    ds, run, space, bm25 = outranked_world(
        "credential recovery", "forgot password", [1.0, 1.0, 0.0, 0.0], target_vec=(0.6, 0.8, 0)
    )
    kind = RunKind("lexical", "given")
    d = diagnose_run(ds, run, space, bm25, k=K, calibration=CAL, sources=EvidenceSources(kind=kind))
    (f,) = d.failures
    assert f.cls == "vocabulary_mismatch" and f.recommendation == recommendation(
        "vocabulary_mismatch", "lexical"
    )
    # no hits to calibrate on: the share of the query's BM25 weight is read against min_overlap (0% < 20%)
    assert f.evidence.startswith(
        "BM25 does not rank the target within k=2: the target holds 0% of the query's BM25 weight, less than "
        "min_overlap (20%); run rank"
    )
    payload = d.to_dict()
    assert payload["run_kind"] == "lexical" and payload["run_kind_evidence"]["source"] == "given"
    assert payload["recommendations"]["vocabulary_mismatch"] == f.recommendation
    # the same world read as a dense run: cos 0.6 >= 0.5, so not dense-low; dense rank 4 > k and no BM25 rank
    assert diagnose_run(ds, run, space, bm25, k=K, calibration=CAL).failures[0].cls == "semantic_gap"


def test_the_remedy_of_a_lexical_vocabulary_mismatch_is_dense_retrieval():
    # k = 1. q1 -> t1: the lexical run has [a, t1] (miss); dense search has [t1, a]: t1 first -> recovered.
    # q2 -> t2: the run has [t2] (hit); dense search [b, t2] loses it. hit_rate@1: run [0, 1], dense [1, 0].
    ds = Dataset(
        qrels=Qrels(
            pd.DataFrame(
                {
                    "query_id": ["q1", "q2"],
                    "doc_id": ["t1", "t2"],
                    "relevance": np.array([1, 1], dtype=np.int64),
                }
            )
        )
    )
    run = lists("mine", {"q1": ["a", "t1"], "q2": ["t2"]})
    dense = lists("dense", {"q1": ["t1", "a"], "q2": ["b", "t2"]})
    from test_remedies import diagnosis_of, failure

    diag = diagnosis_of(run, [failure("q1", "t1", "vocabulary_mismatch")], 1)
    diag.run_kind = RunKind("lexical", "given")
    rem = prove_remedies(ds, run, diag, bm25_run=run, dense_run=dense)
    row = rem.row("vocabulary_mismatch")
    assert (row.remedy_id, row.recovered, row.lost_hits, row.lost_ids) == ("dense", 1, 1, ("q2",))
    # read as a dense run, the remedy is the hybrid of the run and BM25 -- here the run itself: nothing recovered
    diag.run_kind = RunKind()
    row = prove_remedies(ds, run, diag, bm25_run=run, dense_run=dense).row("vocabulary_mismatch")
    assert (row.remedy_id, row.recovered) == ("hybrid", 0)


def _tiny() -> Dataset:
    corpus = Corpus(
        pd.DataFrame(
            {
                "doc_id": ["d1", "d2", "d3"],
                "title": "",
                "text": ["password reset", "vpn access", "lunch menu"],
            }
        )
    )
    queries = Queries(pd.DataFrame({"query_id": ["q1"], "text": ["forgot password"]}))
    qrels = Qrels(
        pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": np.array([1], dtype=np.int64)})
    )
    return Dataset(qrels=qrels, corpus=corpus, queries=queries)


def test_analysis_takes_kinds_checks_them_and_knows_the_baselines():
    run = {"q1": {"d2": 2.0, "d3": 1.0}}
    a = diagnose.Analysis(
        _tiny(), {"mine": run}, k=1, encoder=KeywordEncoder(), kinds={"mine": "lexical"}, baselines=("bm25",)
    )
    assert a.run_kind("mine") == RunKind("lexical", "given")
    assert a.run_kind("bm25").kind == "lexical" and a.run_kind("bm25").source == "baseline"
    assert a.diagnosis("mine").run_kind.kind == "lexical"
    with pytest.raises(DataError) as err:
        diagnose.Analysis(_tiny(), {"mine": run}, kinds={"other": "dense"})
    assert err.value.param == "kinds" and "'other'" in str(err.value)
    with pytest.raises(DataError) as err:
        diagnose.Analysis(_tiny(), {"mine": run}, kinds={"mine": "sparse"})
    assert err.value.param == "kinds"


def test_cli_run_kind_is_in_the_json_and_a_bad_one_names_the_flag(tmp_path, capsys, monkeypatch):
    # the fake encoder where the command loads its model (the bundled model's run is the real_model test below)
    monkeypatch.setattr("diagnose.embed.load_encoder", lambda *a, **kw: KeywordEncoder())
    for name, body in {
        "corpus.jsonl": "\n".join(
            json.dumps({"_id": d, "title": "", "text": t})
            for d, t in [("d1", "password reset"), ("d2", "vpn access"), ("d3", "lunch menu")]
        ),
        "queries.jsonl": json.dumps({"_id": "q1", "text": "forgot password"}),
        "qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1",
        "run.trec": "q1 Q0 d2 1 2.0 r\nq1 Q0 d3 2 1.0 r",
    }.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(body + "\n")
    args = [
        "failures",
        "--data",
        str(tmp_path),
        "--run",
        f"mine={tmp_path / 'run.trec'}",
        "--k",
        "1",
        "--format",
        "json",
        "--no-remedies",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert main([*args, "--run-kind", "mine=lexical"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["run_kind"] == "lexical" and payload["run_kind_evidence"]["source"] == "given"
    assert main([*args, "--run-kind", "mine=sparse"]) != 0
    assert "--run-kind" in capsys.readouterr().err


@pytest.mark.real_model
def test_real_model_lexical_run_zero_score_and_ties_on_tiny_data(tmp_path):
    """The bundled all-MiniLM-L6-v2 on six documents; the user's run is this tool's BM25 (a lexical run)."""
    from diagnose.lexical import BM25Index

    docs = {
        "pw": "Steps to recover a forgotten login credential",
        "pol": "Password rules for the office printers and their toner",
        "lunch1": "The cafeteria serves lunch at noon",
        "lunch2": "The cafeteria serves lunch at noon",
        "vpn": "Connecting to the VPN from home",
        "hol": "Holiday calendar for next year",
    }
    texts = ["How do I reset my password?", "When does the cafeteria serve lunch?"]
    corpus = Corpus(pd.DataFrame({"doc_id": list(docs), "title": "", "text": list(docs.values())}))
    queries = Queries(pd.DataFrame({"query_id": ["q1", "q2"], "text": texts}))
    qrels = Qrels(
        pd.DataFrame(
            {
                "query_id": ["q1", "q2"],
                "doc_id": ["pw", "lunch1"],
                "relevance": np.array([1, 1], dtype=np.int64),
            }
        )
    )
    ds = Dataset(qrels=qrels, corpus=corpus, queries=queries)
    run = BM25Index.build(corpus.texts(), list(corpus.ids)).to_run(["q1", "q2"], texts, depth=10, name="mine")
    # BM25 retrieves only what shares a word: q1 -> [pol] ("password"), q2 -> [lunch2, lunch1] (tied, id descending)
    assert run.ranked_lists() == {"q1": ["pol"], "q2": ["lunch2", "lunch1"]}
    a = diagnose.Analysis(ds, {"mine": run}, k=1, cache_dir=tmp_path)
    # inferred: its top 1 is BM25's on both queries (overlap 1); dense search puts the paraphrase "pw" first for q1
    # (a different document: 0) and one of the two identical lunch documents first for q2 (1): mean 0.5
    kind = a.run_kind("mine")
    assert (kind.kind, kind.source, kind.overlap_bm25, kind.overlap_dense) == (
        "lexical",
        "inferred",
        1.0,
        0.5,
    )
    f = {r["query_id"]: r for r in a.failures("mine").to_dict(orient="records")}
    # q1 -> pw shares no word with the query: BM25 score 0, no BM25 rank (the old rule said 1 + #{score > 0} =
    # 1 + 1 ("pol") = 2); the model ranks it first
    pw = f["q1"]
    assert pw["bm25_score"] == 0.0 and pd.isna(pw["bm25_rank"]) and pd.isna(pw["bm25_rank_worst"])
    assert pw["dense_rank"] == 1 and pw["class"] == "vocabulary_mismatch"
    # the lexical rule (issue 35): BM25 misses it and it holds less of the query's BM25 weight than the run's share
    assert pw["evidence"].startswith(
        "BM25 does not rank the target within k=1: the target holds 0% of the query's"
    )
    # q2 -> lunch1 ties with its duplicate lunch2 on both signals: ranks 1..2 each
    lunch = f["q2"]
    assert (lunch["dense_rank"], lunch["dense_rank_worst"], lunch["bm25_rank"], lunch["bm25_rank_worst"]) == (
        1,
        2,
        1,
        2,
    )
    # the remedy of a lexical run's vocabulary mismatch is dense retrieval, and it recovers q1
    row = a.remedies("mine").row("vocabulary_mismatch")
    assert (row.remedy_id, row.failures, row.recovered, row.lost_hits) == ("dense", 1, 1, 0)
