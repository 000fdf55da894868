"""The Python API's parameters checked at the door (issue 22, "Python API misuse"; issue 17, one set of checks).

Every public entry point (``diagnose.load``, ``evaluate``, ``Analysis`` and its methods, ``run_retriever``) given a
value of the wrong type or range raises :class:`DataError` whose ``param`` is the parameter at fault and whose
message quotes what was given and says what is expected; on 8fa1f16 each of these cases raised a raw
TypeError/ValueError/AttributeError/KeyError, or a DataError naming no parameter or the wrong value.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import diagnose
from diagnose import checks
from diagnose.analysis import Analysis
from diagnose.data import DataError
from diagnose.embed import KeywordEncoder
from diagnose.retrievers import run_retriever

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo_corpus"
ANN = str(DEMO / "runs" / "ann_minilm.trec")
QRELS = {"q1": {"d1": 1}}
RUN = {"q1": {"d1": 0.9, "d2": 0.5}}


@pytest.fixture(scope="module")
def ds():
    return diagnose.load(DEMO)


@pytest.fixture(scope="module")
def analysis(ds):
    return Analysis(ds, {"ann": ANN}, encoder=KeywordEncoder())


def nothing(t):
    return ["d1"]


# (case, call(ds, analysis), param, fragments the message must hold: what was given and what is expected)
CASES = [
    ("evaluate k=1.5", lambda ds, a: diagnose.evaluate(QRELS, RUN, k=1.5), "k", ["1.5", "positive integer"]),
    (
        "evaluate k='10'",
        lambda ds, a: diagnose.evaluate(QRELS, RUN, k="10"),
        "k",
        ["'10'", "positive integer"],
    ),
    ("evaluate k=[1, 2.5]", lambda ds, a: diagnose.evaluate(QRELS, RUN, k=[1, 2.5]), "k", ["2.5"]),
    ("evaluate k=True", lambda ds, a: diagnose.evaluate(QRELS, RUN, k=True), "k", ["True"]),
    (
        "evaluate metrics=5",
        lambda ds, a: diagnose.evaluate(QRELS, RUN, metrics=5),
        "metrics",
        ["5", "metric names"],
    ),
    (
        "evaluate metrics=[str, int]",
        lambda ds, a: diagnose.evaluate(QRELS, RUN, metrics=["ndcg@10", 3]),
        "metrics",
        ["got 3", "metric names"],
    ),
    ("evaluate qrels=5", lambda ds, a: diagnose.evaluate(5, RUN), "qrels", ["int", "a path"]),
    ("evaluate run=5", lambda ds, a: diagnose.evaluate(QRELS, 5), "run", ["int", "a path"]),
    ("load data=3", lambda ds, a: diagnose.load(3), "data", ["got 3", "a path"]),
    ("load split=3", lambda ds, a: diagnose.load(DEMO, split=3), "split", ["got 3", "qrels split"]),
    (
        "load corpus_fields=list",
        lambda ds, a: diagnose.load(DEMO, corpus_fields=["id"]),
        "corpus_fields",
        ["['id']", "a dict"],
    ),
    (
        "load require_qrels='no'",
        lambda ds, a: diagnose.load(corpus=DEMO / "corpus.jsonl", require_qrels="no"),
        "require_qrels",
        ["'no'", "True or False"],
    ),
    ("Analysis runs=list", lambda ds, a: Analysis(ds, [ANN]), "runs", ["(a list)", "a dict {name: run}"]),
    (
        "Analysis runs=path",
        lambda ds, a: Analysis(ds, ANN),
        "runs",
        ["ann_minilm.trec", "a dict {name: run}"],
    ),
    (
        "Analysis runs={name: int}",
        lambda ds, a: Analysis(ds, {"x": 5}),
        "runs",
        ["runs['x']", "an int", "live retriever"],
    ),
    (
        "Analysis baselines=5",
        lambda ds, a: Analysis(ds, baselines=5),
        "baselines",
        ["got 5", "bm25, dense, hybrid"],
    ),
    (
        "Analysis embeddings=list",
        lambda ds, a: Analysis(ds, embeddings=["d.npy", "q.npy"]),
        "embeddings",
        ["(a list)", "{'doc': path, 'query': path}"],
    ),
    (
        "Analysis embeddings={'doc': 3}",
        lambda ds, a: Analysis(ds, embeddings={"doc": 3, "query": 4}),
        "embeddings",
        ["embeddings['doc']", "got 3", "a path"],
    ),
    (
        "Analysis embeddings={'docs': ...}",
        lambda ds, a: Analysis(ds, embeddings={"docs": "d.npy"}),
        "embeddings",
        ["'docs'", "'doc'"],
    ),
    ("Analysis cache_dir=3", lambda ds, a: Analysis(ds, cache_dir=3), "cache_dir", ["got 3", "a folder"]),
    ("Analysis ks='1,3'", lambda ds, a: Analysis(ds, ks="1,3"), "ks", ["'1,3'", "list of positive integers"]),
    ("Analysis metrics=5", lambda ds, a: Analysis(ds, metrics=5), "metrics", ["got 5", "metric names"]),
    ("Analysis model=3", lambda ds, a: Analysis(ds, model=3), "model", ["got 3", "model name or folder"]),
    (
        "Analysis thresholds=dict",
        lambda ds, a: Analysis(ds, thresholds={"seed_cosine": 0.8}),
        "thresholds",
        ["(a dict)", "Thresholds"],
    ),
    ("Analysis encoder='x'", lambda ds, a: Analysis(ds, encoder="x"), "encoder", ["'x'", "encoder object"]),
    ("Analysis progress='yes'", lambda ds, a: Analysis(ds, progress="yes"), "progress", ["'yes'", "a bool"]),
    ("Analysis.metrics(5)", lambda ds, a: a.metrics(5), "metrics", ["got 5", "metric names"]),
    ("Analysis.bounds(runs=3)", lambda ds, a: a.bounds(runs=3), "runs", ["got 3", "run names"]),
    (
        "Analysis.gate(list)",
        lambda ds, a: a.gate(["ndcg@10"]),
        "fail_under",
        ["(a list)", "a dict {metric: value}"],
    ),
    ("Analysis.slices(3)", lambda ds, a: a.slices(3), "slice_by", ["got 3", "field name"]),
    (
        "Analysis.map(color_by=3)",
        lambda ds, a: a.map(color_by=3),
        "color_by",
        ["got 3", "'role' or 'failure_class'"],
    ),
    ("Analysis.with_qrels(dict)", lambda ds, a: a.with_qrels(QRELS), "qrels", ["(a dict)", "a Qrels"]),
    ("Analysis.prepare('x')", lambda ds, a: a.prepare("x"), "progress", ["'x'", "a bool"]),
    ("Analysis.models(3)", lambda ds, a: a.models(3), "models", ["got 3", "model names"]),
    (
        "run_retriever depth=1.5",
        lambda ds, a: run_retriever(nothing, {"q1": "a"}, depth=1.5),
        "depth",
        ["1.5", "positive integer"],
    ),
    (
        "run_retriever concurrency=0",
        lambda ds, a: run_retriever(nothing, {"q1": "a"}, concurrency=0),
        "concurrency",
        ["got 0", "positive integer"],
    ),
    (
        "run_retriever queries=list",
        lambda ds, a: run_retriever(nothing, ["a"]),
        "queries",
        ["list", "a dict"],
    ),
    (
        "run_retriever name=3",
        lambda ds, a: run_retriever(nothing, {"q1": "a"}, name=3),
        "name",
        ["got 3", "a str"],
    ),
    (
        "run_retriever id_key=3",
        lambda ds, a: run_retriever(nothing, {"q1": "a"}, id_key=3),
        "id_key",
        ["got 3", "a str"],
    ),
    (
        "run_retriever chunk_to_doc=3",
        lambda ds, a: run_retriever(nothing, {"q1": "a"}, chunk_to_doc=3),
        "chunk_to_doc",
        ["got 3", "'max'"],
    ),
    ("run_retriever retriever=42", lambda ds, a: run_retriever(42, {"q1": "a"}), "retriever", ["an int"]),
]


@pytest.mark.parametrize("call, param, fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_wrong_argument_is_a_data_error_naming_the_parameter(ds, analysis, call, param, fragments):
    with pytest.raises(DataError) as err:
        call(ds, analysis)
    assert err.value.param == param
    for fragment in fragments:
        assert fragment in str(err.value)


def test_one_name_given_alone_is_a_list_of_one(ds, analysis):
    # a str for baselines is one kind (on 8fa1f16 it was iterated: 'b', 'm', '2', '5')
    assert Analysis(ds, baselines="bm25").run_names == ["bm25"]
    # one cutoff for ks, one metric name for metrics: lists of one; k (10) is always added to ks
    a = Analysis(ds, {"ann": ANN}, ks=5, metrics="ndcg@10", encoder=KeywordEncoder())
    assert a.ks == (5, 10)
    assert a.metric_names() == ["ndcg@10"]
    assert list(analysis.metrics("ndcg@10").columns) == ["ndcg@10"]
    assert list(analysis.bounds(runs="ann")["run"].unique()) == ["ann"]
    # one run file for load(runs=): a run named after the file (on 8fa1f16: one run per character)
    assert list(diagnose.load(DEMO, runs=ANN).runs) == ["ann_minilm"]


def test_positive_int():
    assert checks.positive_int(np.int64(3), "k") == 3 and type(checks.positive_int(np.int64(3), "k")) is int
    for bad in (0, -1, True, 1.5, 2.0, "3", None, [1]):
        with pytest.raises(DataError, match="k must be a positive integer") as err:
            checks.positive_int(bad, "k")
        assert err.value.param == "k"
    with pytest.raises(DataError, match=r"^k must be a positive integer \(the rank cutoff\), got 0\.$"):
        checks.rank_cutoff(0)


def test_integer_at_least():
    assert checks.integer_at_least(np.int64(2), "n_neighbors", 2) == 2
    assert checks.integer_at_least(0, "cap", 0) == 0  # the bound itself is allowed
    for bad in (1, True, 2.0, 2.5, "3", None):
        with pytest.raises(DataError, match=r"^n_neighbors must be an integer >= 2, got ") as err:
            checks.integer_at_least(bad, "n_neighbors", 2)
        assert err.value.param == "n_neighbors"
    with pytest.raises(DataError, match=r"^pca_dims must be an integer >= 2 or None, got 1\.$"):
        checks.integer_at_least(1, "pca_dims", 2, note=" or None")


def test_the_integer_checks_beside_the_door_speak_as_the_door():
    """The lower layers' integer checks (dense search, BM25 top k, the baselines' depth, context metrics, the
    diagnosis, the map's sampling and layout) use checks.py's words: a numpy integer passes, a bool or a float
    does not, and the message names the parameter and the value."""
    from diagnose.embed.search import dense_search
    from diagnose.projection.layout import LayoutRecipe
    from diagnose.projection.sampling import sample_for_map

    vecs = np.eye(3, dtype=np.float32)
    assert dense_search(vecs, vecs, np.int64(1))[0].shape == (3, 1)  # one nearest document per query
    for bad in (0, True, 1.0):
        with pytest.raises(DataError, match=r"^k must be a positive integer, got ") as err:
            dense_search(vecs, vecs, bad)
        assert err.value.param == "k"
    with pytest.raises(DataError, match=r"^cap must be an integer >= 0, got -1\.$"):
        sample_for_map(["d"], ["q"], cap=-1)
    with pytest.raises(DataError, match=r"^pca_dims must be an integer >= 2 or None, got 1\.5\.$"):
        LayoutRecipe(pca_dims=1.5)


def test_finite_number():
    assert checks.finite_number(1, "x", low=0, high=1) == 1.0
    for bad in (float("nan"), float("inf"), True, "0.5", -0.1, 1.1):
        with pytest.raises(DataError, match=r"x must be a finite number in \[0, 1\]"):
            checks.finite_number(bad, "x", low=0, high=1)
    with pytest.raises(DataError, match=r"> 0"):
        checks.finite_number(0, "x", low=0, open_low=True)
    with pytest.raises(DataError, match="^custom 5 x$"):
        checks.finite_number(5, "x", high=1, message="custom {value} {param}")


def test_one_of_path_list_of():
    assert checks.one_of("fast", "precision", ("fast", "exact")) == "fast"
    with pytest.raises(DataError, match=r"^precision must be 'fast' or 'exact', got \['fast'\]\.$"):
        checks.one_of(["fast"], "precision", ("fast", "exact"))
    assert checks.either(("a", "b", "c")) == "'a', 'b' or 'c'"
    assert checks.path("x/y", "p") == Path("x/y")
    for bad in (3, b"x", ["x"]):
        with pytest.raises(DataError, match="p must be a path"):
            checks.path(bad, "p")
    assert checks.list_of((1, 2), "ks", lambda x: x * 2, expected="ints") == [2, 4]
    with pytest.raises(DataError, match="ks must be ints, got 'ab'"):
        checks.list_of("ab", "ks", lambda x: x, expected="ints")
    with pytest.raises(DataError, match=r"ks must be ints, got \{1: 2\} \(a dict\)"):
        checks.list_of({1: 2}, "ks", lambda x: x, expected="ints")
    assert checks.list_of("ab", "ks", lambda x: x, expected="ints", single=lambda v: isinstance(v, str)) == [
        "ab"
    ]
    assert len(checks.given("x" * 500)) == checks.MAX_SHOWN
