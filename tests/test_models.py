"""Embedding-model choice, for real: the bundled model against a second model built here (no hub)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from diagnose.analysis import Analysis
from diagnose.cli import main
from diagnose.data import Corpus, Dataset, Qrels, Queries
from diagnose.embed import KeywordEncoder
from diagnose.failures import CLASSES

DOCS = {
    "pw": "Resetting your password: open the account page and choose forgot password to get a reset link.",
    "vpn": "The VPN client must be connected before you can reach internal dashboards from home.",
    "leave": "Parental leave: employees get sixteen weeks of paid leave after the birth of a child.",
    "exp": "Expense claims for travel are filed in the finance portal within thirty days with receipts.",
    "lunch": "The cafeteria serves lunch from noon to two; vegetarian options every day.",
    "mfa": "Multi-factor authentication codes come from the authenticator app on your phone.",
}
QUERIES = {
    "q1": "I forgot my password",
    "q2": "how do I get on the company network from home",
    "q3": "time off when my baby is born",
    "q4": "getting money back for a business trip",
    "q5": "where is the two-step code",
}
QRELS = [("q1", "pw", 2), ("q2", "vpn", 2), ("q3", "leave", 2), ("q4", "exp", 1), ("q5", "mfa", 2)]


def dataset() -> Dataset:
    corpus = Corpus(pd.DataFrame({"doc_id": list(DOCS), "title": "", "text": list(DOCS.values())}))
    queries = Queries(pd.DataFrame({"query_id": list(QUERIES), "text": list(QUERIES.values())}))
    qrels = Qrels(
        pd.DataFrame(
            {
                "query_id": [q for q, _, _ in QRELS],
                "doc_id": [d for _, d, _ in QRELS],
                "relevance": np.array([g for _, _, g in QRELS], dtype=np.int64),
            }
        )
    )
    return Dataset(qrels=qrels, corpus=corpus, queries=queries)


def write_beir(folder) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir()
    with open(folder / "corpus.jsonl", "w") as f:
        for d, t in DOCS.items():
            f.write(json.dumps({"_id": d, "title": "", "text": t}) + "\n")
    with open(folder / "queries.jsonl", "w") as f:
        for q, t in QUERIES.items():
            f.write(json.dumps({"_id": q, "text": t}) + "\n")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS)
    )


def test_compare_models_with_fake_encoders(tmp_path):
    # two deterministic encoders: hashing into 512 vs 8 buckets; 8 buckets collide a lot, so it cannot be better
    big, small = KeywordEncoder(dim=512), KeywordEncoder(dim=8)
    analysis = Analysis(dataset(), {}, k=3, encoder=big, cache_dir=tmp_path)
    cmp = analysis.models([big, small], n_resamples=999)
    table = cmp.table()
    assert list(table["model"]).count(big.name) == 1 and len(table) == 2
    assert set(table["dim"]) == {512, 8}
    # index memory = docs x dim x 4 bytes
    assert table.set_index("dim").loc[512, "index_mb"] == pytest.approx(6 * 512 * 4 / 1e6)
    assert (table["docs_per_s"] > 0).all()
    # 5 queries cannot separate two models significantly: both share rank 1
    assert table["rank"].tolist() == [1, 1] and table["tied_with_best"].all()
    assert {f"n_{c}" for c in CLASSES} <= set(table.columns)


@pytest.mark.real_model
def test_models_cli_with_two_real_models(tmp_path, second_model, capsys):
    data = tmp_path / "data"
    write_beir(data)
    code = main(
        [
            "models",
            "--data",
            str(data),
            "--model",
            "default",
            "--model",
            str(second_model),
            "--k",
            "3",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--precision",
            "exact",
            "--format",
            "json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    payload = json.loads(out)
    rows = {r["model"]: r for r in payload["models"]}
    assert set(rows) == {"all-MiniLM-L6-v2 (bundled)", str(second_model)}
    assert rows[str(second_model)]["dim"] == 64 and rows["all-MiniLM-L6-v2 (bundled)"]["dim"] == 384
    for r in rows.values():
        assert 0 <= r["ndcg@3"] <= 1 and r["ci_low"] <= r["ndcg@3"] <= r["ci_high"]
        assert r["docs_per_s"] > 0 and -1 <= r["calibrated_threshold"] <= 1
    # the bundled model answers these paraphrases well: hit@3 on most queries
    assert rows["all-MiniLM-L6-v2 (bundled)"]["recall@3"] >= 0.6
