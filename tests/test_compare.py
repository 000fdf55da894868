"""Per-query deltas, reranking against its ceiling, and a live cross-encoder built locally (no hub)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from diagnose.data import Qrels, Run
from diagnose.metrics import evaluate
from diagnose.whatif.compare import per_query_deltas, rerank_cross_encoder, rerank_report

QRELS = Qrels(
    pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q3"],
            "doc_id": ["a", "b", "c"],
            "relevance": np.array([1, 1, 1], dtype=np.int64),
        }
    )
)


def run(name, lists):
    return Run.from_ranked_lists(
        name, {q: [(d, 10.0 - i) for i, d in enumerate(ds)] for q, ds in lists.items()}
    )


def test_per_query_deltas_fixed_broken_better():
    # reference: q1 hit at 1 (mrr 1), q2 miss (0), q3 at 2 (0.5); other: q1 miss, q2 at 1, q3 at 1
    ref = evaluate(QRELS, run("ref", {"q1": ["a"], "q2": ["x"], "q3": ["x", "c"]}), ["mrr"])
    oth = evaluate(QRELS, run("new", {"q1": ["x"], "q2": ["b"], "q3": ["c"]}), ["mrr"])
    d = per_query_deltas(ref, oth, "mrr").set_index("query_id")
    assert d.loc["q1", "change"] == "broken" and d.loc["q1", "delta"] == -1.0
    assert d.loc["q2", "change"] == "fixed" and d.loc["q2", "delta"] == 1.0
    assert d.loc["q3", "change"] == "better" and d.loc["q3", "delta"] == 0.5


def test_rerank_report_ceiling_and_changes():
    # candidates hold a for q1 at rank 3 and never b: recall@3 ceiling = (1 + 0 + 1) / 3
    cands = run("c", {"q1": ["x", "y", "a"], "q2": ["x", "y", "z"], "q3": ["c", "y", "z"]})
    reranked = run("r", {"q1": ["a", "x", "y"], "q2": ["x", "y", "z"], "q3": ["y", "z", "c"]})
    rep = rerank_report(QRELS, cands, reranked, k=1, depth=3)
    assert rep.ceiling == pytest.approx(2 / 3)
    assert rep.recovered == ["q1"] and rep.introduced == ["q3"]
    assert rep.before["mrr"] == pytest.approx((1 / 3 + 0 + 1) / 3)


@pytest.mark.real_model
def test_live_cross_encoder_from_a_local_folder(tmp_path):
    """A CrossEncoder built here from the bundled MiniLM weights with a seeded scoring head: a real model folder,
    loaded by path, so the live reranking path runs end to end offline."""
    import torch
    from sentence_transformers import CrossEncoder

    from diagnose.embed import default_model_path

    torch.manual_seed(0)
    ce = CrossEncoder(str(default_model_path()), num_labels=1, device="cpu")
    folder = tmp_path / "ce"
    ce.save(str(folder))
    cands = run("cands", {"q1": ["x", "a"], "q2": ["b", "y"]})
    out = rerank_cross_encoder(
        cands,
        {"q1": "reset my password", "q2": "vpn"},
        {"a": "password reset steps", "x": "lunch menu", "b": "vpn client", "y": "holiday policy"},
        str(folder),
        depth=2,
    )
    assert out.name == "cands+rerank"
    got = out.ranked_lists()
    assert sorted(got["q1"]) == ["a", "x"] and sorted(got["q2"]) == ["b", "y"]
    assert np.isfinite(out.df["score"]).all()
    # scores are the cross-encoder's, and each list is sorted by them
    for _, g in out.df.groupby("query_id"):
        assert list(g["score"]) == sorted(g["score"], reverse=True)


def test_cross_encoder_that_cannot_load_is_a_clear_error(tmp_path):
    from diagnose.data import DataError

    with pytest.raises(DataError, match="Could not load the cross-encoder"):
        rerank_cross_encoder(run("c", {"q1": ["a"]}), {"q1": "x"}, {"a": "y"}, str(tmp_path / "nope"))
