"""The bundled demo corpus holds what the tool is meant to find, with the real default model."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.failures import CLASSES, diagnose_run, find_label_noise, hubness
from diagnose.io import load_dataset
from diagnose.lexical import BM25Index
from diagnose.space import VectorSpace

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"


def test_demo_loads_without_problems():
    ds = load_dataset(
        data_dir=DEMO, runs=[DEMO / "runs" / "ann_minilm.trec", DEMO / "runs" / "bm25_langchain.trec"]
    )
    assert len(ds.corpus) >= 150 and len(ds.queries) >= 60
    assert not [p for p in ds.report if p.severity == "error"]
    multi = ds.qrels.relevant().groupby("query_id").size()
    assert (multi >= 2).sum() >= 5  # multi-document answers
    assert set(ds.qrels.df["relevance"]) >= {1, 2}  # graded


@pytest.mark.real_model
def test_every_class_but_missing_document_occurs_with_the_default_model(tmp_path):
    ds = load_dataset(data_dir=DEMO, runs=[DEMO / "runs" / "ann_minilm.trec"])
    run = ds.runs["ann_minilm"]
    space = VectorSpace.build(ds, ds.qrels.queries_with_relevant(), cache_dir=tmp_path)
    bm25 = BM25Index.build(ds.corpus.texts(), list(ds.corpus.ids))
    diag = diagnose_run(ds, run, space, bm25, k=10)
    counts = diag.class_counts
    assert counts["missing_document"] == 0
    # filtered_out needs a metadata filter (tests/test_filters.py plants one), split a chunk corpus with spans
    for cls in (c for c in CLASSES if c not in ("missing_document", "filtered_out", "split")):
        assert counts[cls] >= 1, f"no {cls} on the demo corpus: {counts}"
    # the calibrated threshold of MiniLM sits far below the seed's 0.75
    assert not diag.calibration.fallback and diag.calibration.calibrated < 0.6
    noise = find_label_noise(ds, run, space, k=10)
    assert len(noise.unjudged_duplicates) >= 3 and len(noise.conflicting_queries) >= 1
    hubs = hubness(run, k=10, n_docs=len(ds.corpus))
    assert hubs.hubs["share"].max() >= 0.15
