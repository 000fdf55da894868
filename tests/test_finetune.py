"""``diagnose finetune`` / ``Analysis.finetune``: the triplets, the folds (no query scored by a model that saw it or
its relevant documents), real training runs of a few steps with the bundled all-MiniLM-L6-v2 on tiny data (no fake
trainer), the saved folder loading, the CLI's JSON keys, ``tuned`` equal to ``diagnose evaluate --baseline dense
--model SAVED``, and the errors of bad input naming the flag."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from diagnose.cli import main
from diagnose.data import DataError, Qrels, Run
from diagnose.whatif.finetune import assign_folds, check_folds, mine_triplets, scored_by

KEYS = {
    "base",
    "tuned",
    "comparisons",
    "p_value",
    "model_path",
    "train_pairs",
    "seconds",
    "recovered",
    "broken",
}
TINY = ["--epochs", "1", "--batch-size", "4", "--max-seq-length", "32", "--pairs-per-query", "1"]

TOPICS = ["vitamin d bone density", "green tea cancer risk", "sugar and diabetes", "red meat heart disease",
          "sleep and memory", "coffee and blood pressure", "fiber and gut bacteria", "salt and stroke",
          "exercise and depression", "omega-3 and inflammation", "soy and breast cancer", "alcohol and liver"]  # fmt: skip


def _qrels(rows):
    return Qrels(pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]))


def _run(rows):
    df = pd.DataFrame(rows, columns=["query_id", "doc_id"])
    df["rank"] = df.groupby("query_id").cumcount() + 1
    df["score"] = -df["rank"].astype(float)
    return Run("r", df)


def test_triplets_take_relevant_positives_and_top_non_relevant_negatives():
    # q1: relevant d1 (grade 2) and d2 (grade 1), judged non-relevant d3; the dense run ranks d9, d1, d3; BM25 d8, d2
    qrels = _qrels([("q1", "d1", 2), ("q1", "d2", 1), ("q1", "d3", 0)])
    dense, bm25 = _run([("q1", "d9"), ("q1", "d1"), ("q1", "d3")]), _run([("q1", "d8"), ("q1", "d2")])
    got = mine_triplets(qrels, ["q1"], dense=dense, bm25=bm25, pairs_per_query=2)
    # candidates interleaved dense/BM25: d9, d8, d1, d2, d3 -> non-relevant: d9, d8, d3 -> judged first: d3, d9, d8
    assert [(t.positive_id, t.negative_id) for t in got] == [("d1", "d3"), ("d2", "d9")]
    # the excluded documents (a fold's test documents) are neither positives nor negatives
    got = mine_triplets(qrels, ["q1"], dense=dense, bm25=bm25, pairs_per_query=2, exclude_docs={"d1", "d3"})
    assert [(t.positive_id, t.negative_id) for t in got] == [("d2", "d9")]


def test_triplets_do_not_depend_on_the_hash_seed():
    """Equal grades: the positives kept are the first in qrels order in every process (two interpreters with other
    string hash seeds mine the same triplets; a set's iteration order made NFCorpus trainings differ run to run)."""
    import subprocess
    import sys

    code = (
        "import pandas as pd\n"
        "from diagnose.data import Qrels, Run\n"
        "from diagnose.whatif.finetune import mine_triplets\n"
        "docs = [f'd{i}' for i in range(40)]\n"
        "q = Qrels(pd.DataFrame({'query_id': 'q', 'doc_id': docs, 'relevance': 1}))\n"
        "r = Run('r', pd.DataFrame({'query_id': 'q', 'doc_id': ['n1', 'n2'], 'rank': [1, 2], 'score': [2.0, 1.0]}))\n"
        "print(mine_triplets(q, ['q'], dense=r, bm25=None, pairs_per_query=3))\n"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1, outs
    assert "'d0'" in next(iter(outs)) and "'d3'" not in next(iter(outs))  # the first three in qrels order


def test_folds_need_enough_queries():
    with pytest.raises(DataError) as e:
        assign_folds(["q1", "q2"], 3, seed=0)
    assert e.value.param == "folds"
    folds = assign_folds([f"q{i}" for i in range(7)], 3, seed=0)
    assert sorted(q for f in folds for q in f) == sorted(f"q{i}" for i in range(7))  # each query in one fold
    assert sorted(len(f) for f in folds) == [2, 2, 3]  # 7 dealt round-robin into 3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """12 documents (one per topic), 12 queries; test qrels on q0..q5, train on q6..q11; q0 and q1 share d1 (so
    the by-document rule of the folds has something to exclude)."""
    root = tmp_path_factory.mktemp("tiny")
    (root / "qrels").mkdir()
    with open(root / "corpus.jsonl", "w") as f:
        for i, t in enumerate(TOPICS):
            f.write(
                json.dumps({"_id": f"d{i}", "title": t, "text": f"A study of {t} in adults over ten years."})
                + "\n"
            )
    with open(root / "queries.jsonl", "w") as f:
        for i, t in enumerate(TOPICS):
            f.write(json.dumps({"_id": f"q{i}", "text": f"does {t.split(' and ')[0]} matter"}) + "\n")
    test = [("q0", "d0"), ("q0", "d1"), ("q1", "d1")] + [(f"q{i}", f"d{i}") for i in range(2, 6)]
    train = [(f"q{i}", f"d{i}") for i in range(6, 12)]
    for name, rows in (("test", test), ("train", train)):
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t1" for q, d in rows]
        (root / "qrels" / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    return root


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.real_model
def test_split_training_is_what_evaluate_reports_for_the_saved_model(tiny, tmp_path, capsys):
    out, cache = tmp_path / "tuned", tmp_path / "cache"
    code, stdout, err = _cli(capsys, "finetune", "--data", tiny, "--train-split", "train", "--out", out, "--format",
                             "json", "--cache-dir", cache, *TINY)  # fmt: skip
    assert code == 0, err
    got = json.loads(stdout)
    assert set(got) >= KEYS
    assert "training pairs" in err and "documents to re-encode" in err  # the cost, printed before training
    # 6 training queries, one relevant document each, one pair per query
    assert got["train_pairs"] == 6 and got["mode"] == "split"
    assert {c["metric"] for c in got["comparisons"]} == {"ndcg@10", "recall@10", "mrr"}
    code, stdout, err = _cli(capsys, "evaluate", "--data", tiny, "--baseline", "dense", "--model",
                             got["model_path"], "--format", "json", "--cache-dir", cache)  # fmt: skip
    assert code == 0, err
    assert json.loads(stdout)["runs"]["dense"]["aggregate"] == got["tuned"]
    code, stdout, _ = _cli(capsys, "evaluate", "--data", tiny, "--baseline", "dense", "--format", "json",
                           "--cache-dir", cache)  # fmt: skip
    assert json.loads(stdout)["runs"]["dense"]["aggregate"] == got["base"]


@pytest.mark.real_model
def test_cross_fitting_never_scores_a_query_with_a_model_trained_on_it(tiny, tmp_path):
    import diagnose
    from diagnose.embed import load_encoder
    from diagnose.whatif.finetune import TrainSettings

    ds = diagnose.load(str(tiny))
    an = diagnose.Analysis(ds, {}, baselines=("bm25",), cache_dir=tmp_path / "cache")
    settings = TrainSettings(batch_size=4, max_seq_length=32, pairs_per_query=1)
    res = an.finetune(tmp_path / "final", folds=2, settings=settings)
    assert len(res.folds) == 2 and res.mode == "folds"
    check_folds(res.folds, ds.qrels)  # by query and by relevant document, on the triplets actually trained
    for fold in res.folds:
        anchors = {t.query_id for t in fold.triplets}
        assert anchors and not anchors & set(fold.test)
    assert sorted(scored_by(res.folds)) == sorted(an.golden)  # every golden query scored once, out of fold
    # q0 and q1 share d1: whichever fold holds one of them, d1 is in no triplet of that fold's model
    for fold in res.folds:
        if {"q0", "q1"} & set(fold.test):
            assert all("d1" not in (t.positive_id, t.negative_id) for t in fold.triplets)
    # the final model: every golden query (6), one pair each; the folder loads and encodes
    assert res.train_pairs == 6
    enc = load_encoder(res.model_path, precision="exact")
    assert enc.encode(["vitamin d"]).shape == (1, 384)
    # given the result, the remedy matrix has a finetune column, semantic_gap's own remedy when the class has
    # failures; without it, none, although finetune ran (no hidden state between the steps)
    assert "finetune" not in an.remedy_matrix("bm25").remedy_ids
    matrix = an.remedy_matrix("bm25", finetune=res)
    assert "finetune" in matrix.remedy_ids
    assert all(matrix.own[c] == "finetune" for c in matrix.classes if c == "semantic_gap")


def test_bad_input_names_the_flag(tiny, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cases = [
        (["--train-split", "nosuch", "--out", tmp_path / "a"], "--train-split"),
        (["--folds", "50", "--out", tmp_path / "b"], "--folds"),
        (["--folds", "2", "--out", blocker / "sub"], "--out"),
    ]
    for argv, flag in cases:
        code, _, err = _cli(capsys, "finetune", "--data", tiny, *argv)
        assert code == 2 and flag in err, err
