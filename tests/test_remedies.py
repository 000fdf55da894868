"""Remedies proven on the data: hand-built runs where every count and p-value is worked out in a comment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diagnose.data import DataError, Dataset, Qrels, Run
from diagnose.embed import KeywordEncoder
from diagnose.failures import (
    CLASSES,
    Calibration,
    Diagnosis,
    EvidenceSources,
    Failure,
    Thresholds,
    diagnose_run,
)
from diagnose.search import baselines as bl
from diagnose.search.rerank import cosine_rerank
from diagnose.search.space import VectorSpace
from diagnose.whatif.remedies import TABLE_COLUMNS, prove_remedies

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"
CAL = Calibration("fake", seed=0.75, calibrated=0.5, percentile=10, n_pairs=10, fallback=False)


def qrels_of(judged: dict[str, dict[str, int]]) -> Qrels:
    rows = [(q, d, g) for q, docs in judged.items() for d, g in docs.items()]
    return Qrels(
        pd.DataFrame(
            {
                "query_id": [r[0] for r in rows],
                "doc_id": [r[1] for r in rows],
                "relevance": np.array([r[2] for r in rows], dtype=np.int64),
            }
        )
    )


def run_of(name: str, lists: dict[str, list[str]]) -> Run:
    return Run.from_ranked_lists(
        name, {q: [(d, 10.0 - i) for i, d in enumerate(docs)] for q, docs in lists.items()}
    )


def failure(q: str, d: str, cls: str) -> Failure:
    """A failure with only what the remedies read (query, target, class); the rest is blank evidence."""
    return Failure(
        query_id=q,
        query_text="",
        doc_id=d,
        grade=1,
        cls=cls,
        cosine=None,
        run_rank=None,
        run_depth=0,
        dense_rank=None,
        bm25_rank=None,
        bm25_score=None,
        present_terms=(),
        missing_terms=(),
        overlap=None,
        kth_cosine=None,
        margin=None,
        duplicate_doc_id=None,
        duplicate_cosine=None,
        seed_verdict="n/a",
        calibrated_verdict="n/a",
        evidence="",
        recommendation="",
    )


def diagnosis_of(
    run: Run,
    failures: list[Failure],
    k: int,
    mode: str = "hit",
    n: int = 0,
    thresholds: Thresholds = Thresholds(),  # noqa: B008 - frozen
) -> Diagnosis:
    failed = list(dict.fromkeys(f.query_id for f in failures))
    return Diagnosis(run.name, k, mode, failures, CAL, n, failed, thresholds)  # type: ignore[arg-type]


def keyword_space(docs: dict[str, str], queries: dict[str, str]) -> VectorSpace:
    enc = KeywordEncoder(dim=4096)
    return VectorSpace.from_arrays(
        enc.name,
        list(docs),
        enc.encode(list(docs.values())),
        list(queries),
        enc.encode(list(queries.values())),
    )


def test_hybrid_recovers_one_vocabulary_mismatch_and_loses_one_hit():
    # k = 1. Golden: q1 -> t1, q2 -> t2, q3 -> t3.
    # run:  q1 [a, t1] (miss), q2 [t2, b] (hit), q3 [c, d] (miss)
    # bm25: q1 [t1],           q2 [b, x],        q3 [e]
    # RRF k=60: q1: t1 = 1/62 + 1/61 = 0.03252 > a = 1/61 = 0.01639 -> t1 first: recovered
    #           q2: b = 1/62 + 1/61 = 0.03252 > t2 = 1/61 -> b first: the hit is lost
    #           q3: c = e = 1/61 (tie, doc id descending: e first), t3 absent: not recovered
    ds = Dataset(qrels=qrels_of({"q1": {"t1": 1}, "q2": {"t2": 1}, "q3": {"t3": 1}}))
    run = run_of("run", {"q1": ["a", "t1"], "q2": ["t2", "b"], "q3": ["c", "d"]})
    bm25 = run_of("bm25", {"q1": ["t1"], "q2": ["b", "x"], "q3": ["e"]})
    diag = diagnosis_of(
        run, [failure("q1", "t1", "vocabulary_mismatch"), failure("q3", "t3", "vocabulary_mismatch")], 1
    )
    rem = prove_remedies(ds, run, diag, bm25_run=bm25)
    row = rem.row("vocabulary_mismatch")
    assert (row.failures, row.recovered, row.lost_hits) == (2, 1, 1)
    assert row.recovered_ids == ("q1",) and row.lost_ids == ("q2",)
    assert rem.runs["hybrid"].top(1)["doc_id"].tolist() == ["t1", "b", "e"]
    # hit_rate@1: run [0, 1, 0], hybrid [1, 0, 0]; differences +1, -1, 0: mean 0. Exact sign flips of the two
    # non-zero differences: sums 0, +2, -2, 0; every |sum| >= |0| -> p = 4/4 = 1
    assert row.mean_diff == 0.0 and row.p_value == 1.0
    assert rem.hits == 1 and rem.n_queries == 3
    s = rem.sentences()
    assert s == [
        "hybrid (RRF k=60 of the run and BM25) would recover 1 of the 2 failed queries of class vocabulary mismatch "
        "(2 missed pairs) and lose 1 hit (mean hit_rate@1 difference +0.000, paired randomization test on "
        "hit_rate@1: p = 1)."
    ]


def test_dense_recovers_every_index_gap_with_an_exact_p_value():
    # ten queries, each missed by the run (rank 2 at k = 1) and found at rank 1 by exact dense search.
    # hit_rate@1 differences: ten times +1 -> mean 1. Exact test over the 2^10 sign vectors: only all-plus and
    # all-minus reach |sum| = 10 -> p = 2 / 1024 = 0.001953125
    qs = [f"q{i}" for i in range(10)]
    ds = Dataset(qrels=qrels_of({q: {f"t{q}": 1} for q in qs}))
    run = run_of("ann", {q: ["junk", f"t{q}"] for q in qs})
    dense = run_of("dense", {q: [f"t{q}", "junk"] for q in qs})
    diag = diagnosis_of(run, [failure(q, f"t{q}", "index_gap") for q in qs], 1)
    rem = prove_remedies(ds, run, diag, dense_run=dense)
    row = rem.row("index_gap")
    assert (row.failures, row.recovered, row.lost_hits) == (10, 10, 0)
    assert row.mean_diff == 1.0
    assert row.p_value == pytest.approx(2 / 1024)
    assert "p = 0.00195" in row.sentence(1)


def test_cosine_rerank_orders_the_top_by_cosine_and_keeps_the_tail():
    # KeywordEncoder: cosine = shared words / sqrt(words of each) (dim 4096: no collision among these words).
    # query "vpn token reset" (3 words); a "cafeteria menu vpn" -> 1/3; t "vpn token reset guide" -> 3/(sqrt3*2)
    # = 0.866; b "holiday policy" and b2 "parking rules" -> 0 (tie: doc id descending, b2 before b).
    docs = {
        "a": "cafeteria menu vpn",
        "t": "vpn token reset guide",
        "b": "holiday policy",
        "b2": "parking rules",
        "c": "vpn token reset",
    }
    space = keyword_space(docs, {"q": "vpn token reset"})
    assert space.cosine("q", "t") == pytest.approx(3 / (np.sqrt(3) * 2), abs=1e-6)
    assert space.cosine("q", "a") == pytest.approx(1 / 3, abs=1e-6)
    run = run_of("run", {"q": ["a", "b", "t", "b2", "c"], "other": ["x", "y"]})
    r = cosine_rerank(run, space, 4)
    # the top 4 (a, b, t, b2) reranked: t 0.866, a 0.333, b2 0, b 0; c (rank 5) stays 5th although its cosine is 1
    assert r.df[r.df["query_id"] == "q"]["doc_id"].tolist() == ["t", "a", "b2", "b", "c"]
    assert r.df["rank"].tolist() == [1, 2, 3, 4, 5, 1, 2]
    q = r.df[r.df["query_id"] == "q"]
    assert q["score"].iloc[0] == pytest.approx(0.866, abs=1e-3)
    assert q["score"].iloc[4] == -2.0 - 5  # the tail: -2 - original rank, below every cosine
    # "other" has no vector: order kept, scores -2 - rank
    assert r.df[r.df["query_id"] == "other"]["score"].tolist() == [-3.0, -4.0]
    # scores are descending within each query, so the run round-trips through a TREC file in this order
    assert all((g["score"].diff().dropna() <= 0).all() for _, g in r.df.groupby("query_id"))
    with pytest.raises(DataError, match="depth"):
        cosine_rerank(run, space, 0)


def near_miss_world() -> tuple[Dataset, Run, VectorSpace, list[Failure]]:
    """k = 1; q has two relevant documents missed at k: t (run rank 3) and u (run rank 5), both near misses.
    Cosines to q: t "vpn token reset guide" 0.866 > a 0.333 > b 0 = x."""
    docs = {
        "a": "cafeteria menu vpn",
        "b": "holiday policy",
        "t": "vpn token reset guide",
        "x": "other",
        "u": "vpn token reset",
    }
    space = keyword_space(docs, {"q": "vpn token reset"})
    ds = Dataset(qrels=qrels_of({"q": {"t": 1, "u": 1}}))
    run = run_of("run", {"q": ["a", "b", "t", "x", "u"]})
    return ds, run, space, [failure("q", "t", "near_miss"), failure("q", "u", "near_miss")]


def test_rerank_recovers_a_near_miss_and_the_recall_mode_counts_targets():
    # rerank depth 3 x 1 = 3: t rises to rank 1, so in hit mode q is recovered.
    # In recall mode the units are the pairs (q, t) and (q, u): u (rank 5 > 3) is not reranked -> 1 of 2.
    ds, run, space, fs = near_miss_world()
    hit = prove_remedies(ds, run, diagnosis_of(run, fs, 1), space=space)
    row = hit.row("near_miss")
    assert (row.failures, row.recovered, row.lost_hits) == (1, 1, 0)  # one failed query, recovered
    # the two units side by side: 1 failed query (q), 2 missed pairs (q, t) and (q, u)
    assert (row.failed_queries, row.missed_pairs) == (1, 2) and hit.unit == "failed queries"
    assert hit.sentences()[0].startswith(
        "cosine rerank of the top 3 would recover 1 of the 1 failed query of class near miss (2 missed pairs) and "
        "lose 0 hits"
    )
    assert hit.row("ranking_failure").remedy == "cosine rerank of the top 3"
    rec = prove_remedies(ds, run, diagnosis_of(run, fs, 1, "recall"), space=space)
    row = rec.row("near_miss")
    assert (row.failures, row.recovered) == (2, 1) and row.recovered_ids == ("q/t",)
    assert (row.failed_queries, row.missed_pairs) == (1, 2) and rec.unit == "missed pairs"
    assert "recover 1 of the 2 missed pairs of class near miss and" in rec.sentences()[0]


def test_the_rerank_depth_is_the_near_miss_depth_of_the_diagnosis():
    # One source for the depth: Thresholds.near_miss_factor. With near_miss_factor 2 the rerank reaches rank
    # 2 x 1 = 2, so t (run rank 3) stays out and q is not recovered; with 4 it reaches rank 4, t rises to rank 1
    # and q is recovered.
    ds, run, space, fs = near_miss_world()
    for factor, recovered in ((2, 0), (4, 1)):
        diag = diagnosis_of(run, fs, 1, thresholds=Thresholds(near_miss_factor=factor))
        row = prove_remedies(ds, run, diag, space=space).row("near_miss")
        assert row.remedy == f"cosine rerank of the top {factor}" and row.recovered == recovered


def test_rows_without_an_offline_remedy_and_missing_inputs():
    ds = Dataset(qrels=qrels_of({"q1": {"t1": 1}, "q2": {"t2": 1}, "q3": {"t3": 1}}))
    run = run_of("run", {"q1": ["a"], "q2": ["b"], "q3": ["c"]})
    fs = [
        failure("q1", "t1", "label_gap"),
        failure("q2", "t2", "semantic_gap"),
        failure("q3", "t3", "index_gap"),
    ]
    rem = prove_remedies(ds, run, diagnosis_of(run, fs, 1))  # no bm25_run, dense_run, space
    table = rem.table()
    assert list(table.columns) == list(TABLE_COLUMNS) and table["class"].tolist() == list(CLASSES)
    label = rem.row("label_gap")
    assert label.remedy == "judge it" and label.failures == 1 and label.recovered is None
    assert rem.row("semantic_gap").remedy == "no offline remedy"
    gap = rem.row("index_gap")
    assert not gap.available and gap.note == "pass dense_run" and gap.recovered is None
    assert pd.isna(table.set_index("class").at["index_gap", "recovered"])
    assert rem.sentences() == [
        "1 failed query of class label gap (1 missed pair): judge it (not retrieval failures: judge the "
        "near-duplicates the run retrieved; the golden set is probably incomplete).",
        "1 failed query of class index gap (1 missed pair): exact dense search not tried (pass dense_run).",
        "1 failed query of class semantic gap (1 missed pair): no offline remedy (fine-tune the embedding model "
        "or enrich the documents).",
    ]
    assert len(rem.sentences(include_empty=True)) == len(CLASSES)
    assert rem.to_dict()["remedies"][0]["class"] == "missing_document"


def test_metric_other_than_hit_rate_and_mismatched_diagnosis():
    # q1: run has t1 at rank 2 (nDCG@2 = 1/log2(3) = 0.631), bm25 at rank 1 -> hybrid t1 first (nDCG@2 = 1)
    ds = Dataset(qrels=qrels_of({"q1": {"t1": 1}}))
    run = run_of("run", {"q1": ["a", "t1"]})
    bm25 = run_of("bm25", {"q1": ["t1"]})
    diag = diagnosis_of(run, [failure("q1", "t1", "vocabulary_mismatch")], 1)
    rem = prove_remedies(ds, run, diag, bm25_run=bm25, metric="ndcg@2")
    assert rem.metric == "ndcg@2"
    assert rem.row("vocabulary_mismatch").mean_diff == pytest.approx(1 - 1 / np.log2(3))
    with pytest.raises(DataError, match="k=1"):
        prove_remedies(ds, run, diag, bm25_run=bm25, k=5)
    with pytest.raises(DataError, match="not of"):
        prove_remedies(ds, run_of("other", {"q1": ["a"]}), diag)


def _demo_remedies(space, mode: str):
    from diagnose.io import load_dataset
    from diagnose.lexical import BM25Index

    ds = load_dataset(data_dir=DEMO, runs=[DEMO / "runs" / "ann_minilm.trec"])
    run = ds.runs["ann_minilm"]
    golden = ds.qrels.queries_with_relevant()
    bm25 = BM25Index.build(ds.corpus.texts(), list(ds.corpus.ids))
    sp = space(ds, golden)
    diag = diagnose_run(ds, run, sp, bm25, k=10, mode=mode)
    return (
        diag,
        ds,
        prove_remedies(
            ds,
            run,
            diag,
            space=sp,
            bm25_run=bl.bm25_run(ds.corpus, ds.queries, golden, index=bm25),
            dense_run=bl.dense_run(sp.doc_vecs, sp.query_vecs, sp.doc_ids, sp.query_ids),
            k=10,
        ),
    )


def _check_invariants(diag: Diagnosis, rem) -> None:
    counts = diag.class_counts
    for row in rem.rows:
        assert (
            row.missed_pairs == counts[row.cls] and row.failed_queries == diag.class_failed_queries[row.cls]
        )
        assert row.failures == (row.missed_pairs if rem.mode == "recall" else row.failed_queries)
        assert row.failed_queries <= row.missed_pairs
        if row.recovered is not None:
            assert 0 <= row.recovered <= row.failures
            assert 0 <= row.lost_hits <= rem.hits
            assert 0 < row.p_value <= 1
    assert rem.hits <= rem.n_queries


def _check_matrix_diagonal(ds, diag: Diagnosis, rem) -> None:
    """The matrix's diagonal is the remedy table: each class's own remedy on its own class, same counts."""
    from diagnose.whatif.matrix import remedy_matrix

    m = remedy_matrix(ds.qrels, diag, rem)
    assert m.classes and set(m.remedy_ids) == set(rem.runs)
    for row in rem.rows:
        if row.failures and row.recovered is not None:
            cell = m.cell(row.cls, row.remedy_id)
            assert (cell.failures, cell.recovered) == (row.failures, row.recovered) and m.is_own(
                row.cls, row.remedy_id
            )
    for c in m.classes:  # and every cell counts the class's failures in the remedies' unit
        assert {m.cell(c, r).failures for r in m.remedy_ids} == {rem.row(c).failures}


@pytest.mark.parametrize("mode", ["hit", "recall"])
def test_demo_invariants_with_the_keyword_encoder(mode):
    def space(ds, golden):
        return VectorSpace.build(ds, golden, encoder=KeywordEncoder())

    diag, ds, rem = _demo_remedies(space, mode)
    _check_invariants(diag, rem)
    _check_matrix_diagonal(ds, diag, rem)


@pytest.mark.real_model
def test_demo_remedies_with_the_default_model(model_cache):
    def space(ds, golden):
        return VectorSpace.build(ds, golden, cache_dir=model_cache)

    diag, ds, rem = _demo_remedies(space, "hit")
    _check_invariants(diag, rem)
    _check_matrix_diagonal(ds, diag, rem)
    # reported, not asserted beyond the invariants: the numbers move with the demo corpus
    print(rem.table().to_string())
    print("\n".join(rem.sentences()))


@pytest.mark.real_model
def test_a_cross_encoder_is_measured_as_a_second_near_miss_remedy(tmp_path, model_cache, capsys):
    """`diagnose failures --cross-encoder DIR` with a real CrossEncoder folder built here from the bundled weights:
    one row per taxonomy class, then the cross-encoder rerank of the top 3k as one more near_miss row, measured.
    The CrossEncoder is kept small: the first of MiniLM's 6 layers, 32 tokens of each (query, document) pair. The
    full model at its default 512 tokens made the rerank of the demo's top 30 x 109 queries (~3,300 pairs) take
    ~3 minutes of a 2-core machine, and 64 tokens still ~13 CPU s (32: ~7; the layer's matrix products grow with the
    tokens); what is tested is that a CrossEncoder folder is loaded, reranks the top 3k and is measured as a
    remedy, not how well an untrained scoring head ranks."""
    import json

    import torch
    from sentence_transformers import CrossEncoder

    from diagnose.cli import main
    from diagnose.embed import default_model_path

    torch.manual_seed(0)
    folder = tmp_path / "ce"
    ce = CrossEncoder(str(default_model_path()), num_labels=1, device="cpu", max_length=32)
    bert = ce[0].model  # BertForSequenceClassification
    bert.bert.encoder.layer = bert.bert.encoder.layer[:1]
    bert.config.num_hidden_layers = 1
    ce.save(str(folder))
    demo = Path(__file__).resolve().parents[1] / "demo_corpus"
    code = main(
        [
            "failures",
            "--data",
            str(demo),
            "--run",
            str(demo / "runs" / "ann_minilm.trec"),
            "--cross-encoder",
            str(folder),
            "--cache-dir",
            str(model_cache),
            "--format",
            "json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    rows = json.loads(out)["remedies"]["remedies"]
    n = len(CLASSES)
    assert len(rows) == n + 1 and [r["class"] for r in rows[:n]] == list(CLASSES)
    extra = rows[n]
    assert extra["class"] == "near_miss" and extra["remedy_id"] == "crossencoder"
    cosine = rows[[r["class"] for r in rows].index("near_miss")]
    assert extra["failures"] == cosine["failures"] > 0
    assert 0 <= extra["recovered"] <= extra["failures"] and extra["p_value"] is not None


# ------------------------------------------------------------------------------------------ the remedy matrix


def matrix_world():
    """k = 1, hit mode. Four failed queries, each remedy built once and applied to every class:
    q1 vocabulary_mismatch (t1): run [a, t1]; bm25 [t1]; dense [t1]
    q4 vocabulary_mismatch (t4): run [c4];    bm25 [e4]; dense [f4]
    q2 index_gap (t2):           run [b, t2]; bm25 [x];  dense [t2]
    q3 near_miss (t3):           run [a3, b3, t3];       dense [z]; only q3 has a vector (keyword encoder)
    hybrid (RRF k=60): q1 t1 = 1/62 + 1/61 > a = 1/61: recovered; q4 c4 = e4 = 1/61, tie, doc id descending: e4
      first, not relevant; q2 b = x = 1/61 > t2 = 1/62: x first; q3 (no BM25 list) keeps a3 first.
    dense: q1 t1 first and q2 t2 first: recovered; q4 f4, q3 z: not.
    rerank (top 3 x 1 = 3 by cosine): q3 "vpn token reset guide" 0.866 beats a3 and b3 (0): recovered; the other
      queries have no vector and keep their order.
    """
    docs = {"a3": "cafeteria menu", "b3": "holiday policy", "t3": "vpn token reset guide"}
    space = keyword_space(docs, {"q3": "vpn token reset"})
    ds = Dataset(qrels=qrels_of({"q1": {"t1": 1}, "q2": {"t2": 1}, "q3": {"t3": 1}, "q4": {"t4": 1}}))
    run = run_of("run", {"q1": ["a", "t1"], "q2": ["b", "t2"], "q3": ["a3", "b3", "t3"], "q4": ["c4"]})
    bm25 = run_of("bm25", {"q1": ["t1"], "q2": ["x"], "q4": ["e4"]})
    dense = run_of("dense", {"q1": ["t1"], "q2": ["t2"], "q3": ["z"], "q4": ["f4"]})
    fs = [
        failure("q1", "t1", "vocabulary_mismatch"),
        failure("q4", "t4", "vocabulary_mismatch"),
        failure("q2", "t2", "index_gap"),
        failure("q3", "t3", "near_miss"),
    ]
    diag = diagnosis_of(run, fs, 1)
    # kind unknown: a hand-built list, not ordered by the model's cosine (a dense run's near miss is remedied by hybrid)
    rem = prove_remedies(ds, run, diag, space=space, bm25_run=bm25, dense_run=dense, kind="unknown")
    return ds, diag, rem


def test_the_remedy_matrix_applies_every_remedy_to_every_class():
    from diagnose.whatif.matrix import remedy_matrix

    ds, diag, rem = matrix_world()
    m = remedy_matrix(ds.qrels, diag, rem)
    assert m.classes == (
        "near_miss",
        "index_gap",
        "vocabulary_mismatch",
    )  # taxonomy order, classes with failures
    assert set(m.remedy_ids) == {
        "rerank",
        "dense",
        "hybrid",
    }  # the dense run's offline remedies; no judge/none
    # (recovered, failures) per cell, from the docstring of matrix_world
    expected = {
        "vocabulary_mismatch": {"hybrid": (1, 2), "dense": (1, 2), "rerank": (0, 2)},
        "index_gap": {"hybrid": (0, 1), "dense": (1, 1), "rerank": (0, 1)},
        "near_miss": {"hybrid": (0, 1), "dense": (0, 1), "rerank": (1, 1)},
    }
    got = {c: {r: (v["recovered"], v["failures"]) for r, v in row.items()} for c, row in m.to_dict().items()}
    assert got == expected
    # the diagonal is the remedy table's own numbers, the remedied runs are the same objects
    for c in m.classes:
        row = rem.row(c)
        assert m.is_own(c, row.remedy_id)
        assert (m.cell(c, row.remedy_id).recovered, m.cell(c, row.remedy_id).failures) == (
            row.recovered,
            row.failures,
        )
    # hybrid on vocabulary_mismatch: 1 of 2 = 50%; on the others pooled: index_gap 0/1 + near_miss 0/1 = 0 of 2
    assert m.sentence("vocabulary_mismatch") == (
        "hybrid recovers 50% of vocabulary mismatch (1 of 2 failed queries) and 0% of the other failed queries "
        "(0 of 2)."
    )
    # dense on index_gap: 1 of 1; on the others: vocabulary 1/2 + near_miss 0/1 = 1 of 3 = 33%
    assert m.sentence("index_gap") == (
        "dense recovers 100% of index gap (1 of 1 failed queries) and 33% of the other failed queries (1 of 3)."
    )
    assert m.rows()[0] == {
        "class": "near_miss",
        "rerank": "1/1 (100%)*",
        "dense": "0/1 (0%)",
        "hybrid": "0/1 (0%)",
    }
    frame = m.frame()
    assert len(frame) == 9 and frame["own"].sum() == 3
    assert frame.set_index(["class", "remedy"]).at[("vocabulary_mismatch", "hybrid"), "share"] == 0.5


def test_the_remedy_matrix_without_an_own_remedy_and_missing_inputs():
    from diagnose.whatif.matrix import remedy_matrix

    ds, diag, _ = matrix_world()
    fs = [*diag.failures, failure("q4", "t4", "semantic_gap"), failure("q1", "t1", "label_gap")]
    diag = diagnosis_of(
        diag_run := run_of(
            "run", {"q1": ["a", "t1"], "q2": ["b", "t2"], "q3": ["a3", "b3", "t3"], "q4": ["c4"]}
        ),
        fs,
        1,
    )
    bm25 = run_of("bm25", {"q1": ["t1"], "q2": ["x"], "q4": ["e4"]})
    rem = prove_remedies(ds, diag_run, diag, bm25_run=bm25, kind="unknown")  # no dense_run, no space
    m = remedy_matrix(ds.qrels, diag, rem)
    # a remedy is listed as not tried only when a class with failures needed it: no truncated or diluted failure
    # here, so the passage remedy is not news in the matrix; its remedy row still says why it was not tried
    assert m.remedy_ids == ("hybrid",) and set(m.missing) == {"rerank", "dense"}
    assert m.missing["rerank"] == "pass space" and m.missing["dense"] == "pass dense_run"
    assert "pass passage_run" in rem.row("truncated").note  # no passage run: the window unknown or not given
    # semantic_gap (q4): no offline remedy, and hybrid (the only remedy tried) does not recover q4
    assert m.sentence("semantic_gap") == (
        "Semantic gap: it has no offline remedy of its own; no remedy recovers any of its 1 failed queries."
    )
    # label_gap (q1): judge it; hybrid recovers q1 (t1 = 1/62 + 1/61 > a = 1/61)
    assert m.sentence("label_gap") == (
        "Label gap: it has no offline remedy of its own (judge it); hybrid recovers 100% of it (1 of 1 failed "
        "queries), the most."
    )
    assert m.sentence("index_gap").startswith(
        "Index gap: its own remedy, dense, was not tried (pass dense_run)"
    )
    with pytest.raises(ValueError, match="do not match"):
        remedy_matrix(ds.qrels, diagnosis_of(diag_run, fs, 2), rem)


def test_the_remedy_matrix_in_the_markdown_report():
    from diagnose.data import ValidationReport
    from diagnose.report import markdown_report
    from diagnose.whatif.matrix import remedy_matrix

    ds, diag, rem = matrix_world()
    m = remedy_matrix(ds.qrels, diag, rem)
    metrics = pd.DataFrame([{"run": "run", "kind": "your run", "queries": 4, "hit_rate@1": 0.0}])
    md = markdown_report(
        data_label="hand-built",
        data_lines=[],
        model="fake",
        k=1,
        mode="hit",
        metrics=metrics,
        diagnosis=None,
        validation=ValidationReport(),
        remedies=rem,
        remedy_matrix=m,
    )
    assert "### Remedy matrix: every remedy applied to every class's failed queries" in md
    # one table row per class, the own remedy starred: vocabulary_mismatch under hybrid 1 of 2 (matrix_world)
    row = next(line for line in md.splitlines() if line.startswith("| vocabulary_mismatch"))
    assert "1/2 (50%)*" in row and "0/2 (0%)" in row
    for sentence in m.sentences():
        assert f"- {sentence}" in md


@pytest.mark.parametrize("mode", ["hit", "recall"])
def test_the_baselines_passes_give_the_diagnosis_its_ranks(tmp_path, monkeypatch, mode):
    """The analysis computes the dense and BM25 baselines (for the run's kind and the remedies) in the same passes as
    the failed pairs' dense and BM25 ranks, so the diagnosis scores no query again; it is the diagnosis made from
    scratch with the same kind (every field of every failure: tie ranges, BM25 ranks None at score 0)."""
    from diagnose.analysis import Analysis
    from diagnose.failures import evidence
    from diagnose.io import load_dataset

    ds = load_dataset(data_dir=DEMO, runs=[DEMO / "runs" / "ann_minilm.trec"])
    analysis = Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path, failure=mode)
    calls = []
    real_range, real_of = evidence.dense_rank_range, evidence.Bm25Scores.of
    with monkeypatch.context() as m:
        m.setattr(evidence, "dense_rank_range", lambda *a, **k: calls.append("dense") or real_range(*a, **k))
        m.setattr(evidence.Bm25Scores, "of", lambda self, q, t: calls.append("bm25") or real_of(self, q, t))
        shared = analysis.diagnosis("ann_minilm")
        assert calls == []  # every rank came from the baselines' passes
        alone = diagnose_run(
            ds, ds.runs["ann_minilm"], analysis.space, analysis.bm25, k=analysis.k, mode=mode,
            thresholds=analysis.thresholds, sources=EvidenceSources(kind=shared.run_kind),
        )  # fmt: skip
    assert "dense" in calls and "bm25" in calls  # made from scratch: the diagnosis' own passes
    assert len(shared.failures) == len(alone.failures) > 0
    assert [f.to_dict() for f in shared.failures] == [f.to_dict() for f in alone.failures]
    # the demo has both cases the ranks must carry: a BM25 score of 0 (no rank) and a dense tie range
    assert any(f.bm25_score == 0 and f.bm25_rank is None for f in shared.failures)
    assert any(f.dense_rank_worst > f.dense_rank for f in shared.failures if f.dense_rank is not None)


def _named_remedies() -> list[tuple[str, str, str]]:
    """(remedy id, class, run kind) for every remedy a class record names, its by_kind variants included."""
    from diagnose.failures import FAILURE_CLASSES

    named = [(c.remedy.id, c.id, "unknown") for c in FAILURE_CLASSES]
    named += [(v.remedy.id, c.id, kind) for c in FAILURE_CLASSES for kind, v in c.by_kind.items() if v.remedy]
    return named


def test_every_remedy_a_class_names_is_a_record_of_the_registry():
    from diagnose.whatif.registry import COSTS, NOT_RUN, REMEDIES

    for rid, cls, kind in _named_remedies():
        assert rid in REMEDIES, f"{cls} ({kind}) names {rid!r}, which the registry does not hold"
    for spec in REMEDIES.values():
        assert spec.cost in COSTS
        # a remedy that runs needs an input and says why it cannot run without it; one that runs nothing needs none
        assert (bool(spec.needs) and bool(spec.missing)) if spec.runs else not spec.needs
    # judge and none run nothing (the two copies of ("judge", "none") are this one view); finetune runs elsewhere
    assert set(NOT_RUN) == {"judge", "none", "finetune"}
    assert REMEDIES["judge"].cost == "judging" and REMEDIES["finetune"].cost == "training"


@pytest.mark.parametrize(
    "rid", sorted({rid for rid, _, _ in _named_remedies() if rid not in ("judge", "none")})
)
def test_each_remedy_says_its_own_message_when_its_input_is_missing(rid):
    from diagnose.whatif.registry import REMEDIES

    # one failed query q1 (target t1, missed at k = 1) in the first class that names rid; every input given but
    # the ones rid needs: its row is not tried and its note is the record's message; with them, it is measured
    spec = REMEDIES[rid]
    _, cls, kind = next(n for n in _named_remedies() if n[0] == rid)
    ds = Dataset(qrels=qrels_of({"q1": {"t1": 1}}))
    run = run_of("run", {"q1": ["a", "t1"]})
    other = run_of("other", {"q1": ["t1", "a"]})
    space = keyword_space({"a": "alpha", "t1": "target words"}, {"q1": "target words"})
    inputs = {
        "space": space,
        "bm25_run": other,
        "dense_run": other,
        "hybrid_run": other,
        "unfiltered_run": other,
        "merged_run": other,
        "passage_run": lambda: other,
    }
    diag = diagnosis_of(run, [failure("q1", "t1", cls)], 1)
    without = {n: v for n, v in inputs.items() if n not in spec.needs}
    row = prove_remedies(ds, run, diag, kind=kind, **without).row(cls)
    assert row.remedy_id == rid and not row.available and row.note == spec.missing and row.recovered is None
    # every input given: measured (the run "other" has t1 first, so q1 is recovered by every remedy but the
    # rerank, which reorders the run's own top 3: t1 shares both words with q1, a none -> t1 first too)
    row = prove_remedies(ds, run, diag, kind=kind, **inputs).row(cls)
    assert row.available and row.note == "" and row.recovered == 1


def test_the_remedy_matrix_depends_on_its_arguments_not_on_the_call_order(tmp_path):
    """The finetune column comes from the result given, never from what ran before: with and without it, in either
    order, on two analyses, the same matrices."""
    from dataclasses import replace

    from diagnose.analysis import Analysis
    from diagnose.data import DataError
    from diagnose.io import load_dataset
    from diagnose.whatif.finetune import FinetuneResult
    from diagnose.whatif.finetune.result import Cost

    ds = load_dataset(data_dir=DEMO, runs=[DEMO / "runs" / "ann_minilm.trec"])
    cost = Cost(1, 1, 1, 1.0, 1, "cpu", False)

    def result(
        run,
    ):  # a fine-tuning result whose tuned run is ``run`` (no training: the matrix reads the run)
        return FinetuneResult({}, {}, [], None, "", 0, 0.0, {}, {}, "folds", 0, cost, run=run)

    first = Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path)
    # the tuned run stands in as the dense baseline itself, so its column must equal the dense column, cell by cell
    tuned = result(replace(first.baseline("dense"), name="finetuned"))
    plain = first.remedy_matrix("ann_minilm")
    with_ft = first.remedy_matrix("ann_minilm", finetune=tuned)
    again = first.remedy_matrix("ann_minilm")
    assert "finetune" not in plain.remedy_ids and "finetune" not in again.remedy_ids
    assert again.to_dict() == plain.to_dict() and again.own == plain.own
    assert with_ft.remedy_ids == (*plain.remedy_ids, "finetune")
    assert with_ft.remedy_texts["finetune"] == "the fine-tuned model (folds)"
    assert all(with_ft.cell(c, "finetune") == with_ft.cell(c, "dense") for c in with_ft.classes)
    assert {c: with_ft.own[c] for c in with_ft.classes if c == "semantic_gap"} == {
        c: "finetune" for c in with_ft.classes if c == "semantic_gap"
    }
    # the other order, on a fresh analysis: the result first, then without it
    second = Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path)
    assert second.remedy_matrix("ann_minilm", finetune=tuned).to_dict() == with_ft.to_dict()
    assert second.remedy_matrix("ann_minilm").to_dict() == plain.to_dict()
    with pytest.raises(DataError) as e:
        second.remedy_matrix("ann_minilm", finetune=result(None))
    assert e.value.param == "finetune"


# the inputs that are other data, not another ordering of the same candidates: their runs differ from any run by
# construction (chunks merged with their neighbours, passages, the search without the filter, a cross-encoder)
_OTHER_DATA = {"merged_run", "passage_run", "unfiltered_run", "cross_encoder_run"}


@pytest.mark.parametrize("kind", ["dense", "lexical", "hybrid"])
def test_every_class_s_remedy_can_change_a_run_of_its_kind(kind, tmp_path):
    """No remedy that cannot change the outcome (issue: a dense run's near miss "reranked" by its own cosine is the
    identity). The run is the kind's own search with the best document of every third golden query lost (an index
    that lost documents), in the kind's own order (a dense run's: the model's cosine); each class's remedy for that
    kind must give a different top k for some query. With the cosine rerank as a dense run's near_miss or
    ranking_failure remedy this fails. (A run of unknown kind is not known to be ordered by the model's cosine, so
    its near miss keeps the cosine rerank, which adds the model's signal.)"""
    import diagnose
    from diagnose.analysis import Analysis
    from diagnose.failures import CLASSES
    from diagnose.whatif.registry import REMEDIES, RemedyInputs
    from diagnose.whatif.remedies import remedy_for

    a = Analysis(
        diagnose.load(DEMO),
        encoder=KeywordEncoder(),
        cache_dir=tmp_path,
        baselines=("bm25", "dense", "hybrid"),
    )
    base = a.baseline_runs()
    source = base[{"unknown": "dense", "dense": "dense", "lexical": "bm25", "hybrid": "hybrid"}[kind]]
    if kind in (
        "unknown",
        "dense",
    ):  # a dense run is ordered by the model's cosine, ties as the rerank breaks them
        source = cosine_rerank(source, a.space, a.depth)
    lists: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in zip(source.df["query_id"], source.df["doc_id"], source.df["score"], strict=True):
        lists.setdefault(q, []).append((d, float(s)))
    for q in a.golden[::3]:
        if lists.get(q):
            lists[q] = lists[q][1:]
    run = Run.from_ranked_lists("mine", lists)
    inputs = RemedyInputs(
        run, a.thresholds.near_miss_depth(10), space=a.space, bm25_run=base["bm25"], dense_run=base["dense"],
        hybrid_run=base["hybrid"],
    )  # fmt: skip

    def top(r: Run) -> dict[str, list[str]]:
        return {q: docs[:10] for q, docs in r.ranked_lists().items()}

    tried = 0
    for cls in CLASSES:
        spec = REMEDIES[remedy_for(cls, kind).id]
        if not spec.runs or set(spec.needs) & _OTHER_DATA:
            continue
        remedied = spec.builder(inputs)()
        assert top(remedied) != top(run), f"{cls} on a {kind} run: its remedy {spec.id!r} changes nothing"
        tried += 1
    assert tried >= 4  # near_miss, index_gap, vocabulary_mismatch, ranking_failure at least


def test_a_lexical_run_s_ranking_failure_remedy_is_measured(tmp_path):
    """A lexical run's ranking_failure (dense search ranks the target within k, the run beyond 3k) is remedied by
    the hybrid baseline: the analysis passes it for a lexical run too (it passed it for hybrid runs only, so the
    rule's remedy of that class was never tried)."""
    from diagnose.analysis import Analysis
    from diagnose.io import load_dataset

    ds = load_dataset(data_dir=DEMO, runs=[DEMO / "runs" / "bm25_langchain.trec"])
    analysis = Analysis(ds, encoder=KeywordEncoder(), cache_dir=tmp_path)
    assert analysis.diagnosis("bm25_langchain").run_kind.kind == "lexical"
    row = next(r for r in analysis.remedies("bm25_langchain").rows if r.cls == "ranking_failure")
    assert row.remedy_id == "hybrid_baseline" and row.available
