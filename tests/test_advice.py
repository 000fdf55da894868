"""The measured recommendation per class (diagnose/whatif/advice.py): the rule's remedy beside what the matrix
supports, paired tests against the rule's, Holm over the remedies tried; and the findings that follow it."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from test_remedies import diagnosis_of, failure, run_of

from diagnose.failures import CLASSES
from diagnose.whatif.advice import MIN_SHARE, class_advice
from diagnose.whatif.findings import findings
from diagnose.whatif.matrix import MatrixCell, RemedyMatrix
from diagnose.whatif.remedies import Remedies, RemedyResult

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"


def qs(prefix: str, *numbers: int) -> list[str]:
    return [f"{prefix}{i}" for i in numbers]


def built(
    fails: dict[str, list[str]], cells: dict[str, dict[str, list[str]]], own: dict[str, str], lost: int = 0
) -> tuple[Remedies, RemedyMatrix]:
    """Remedies and their matrix by hand, k = 10, hit mode: ``fails`` class -> its failed queries, ``cells`` class ->
    remedy id -> the queries it recovers, ``own`` class -> the rule's remedy id. Each remedy's row (the rule's row of
    a class) loses ``lost`` hits."""
    rids = tuple(dict.fromkeys(r for c in cells.values() for r in c))
    classes = tuple(c for c in CLASSES if c in fails)
    matrix = RemedyMatrix(
        run="run",
        k=10,
        mode="hit",
        unit="failed queries",
        classes=classes,
        remedy_ids=rids,
        remedy_texts={r: f"the {r} run" for r in rids},
        own=own,
        missing={},
        cells={
            c: {r: MatrixCell(len(fails[c]), len(got := cells[c].get(r, [])), tuple(got)) for r in rids}
            for c in classes
        },
    )
    rows = []
    for c in classes:
        rid, n = own[c], len(fails[c])
        got = cells[c].get(rid, []) if rid in rids else None
        rows.append(
            RemedyResult(
                cls=c, failures=n, remedy_id=rid, remedy=f"the {rid} run", recovered=None if got is None else len(got),
                lost_hits=None if got is None else lost, mean_diff=None if got is None else 0.1,
                p_value=None if got is None else 0.01, metric="hit_rate@10", recovered_ids=tuple(got or ()),
                failed_queries=n, missed_pairs=n,
            )
        )  # fmt: skip
    return Remedies("run", 10, "hit", "hit_rate@10", 40, 20, tuple(rows)), matrix


def switch_world():
    """near_miss n1..n10, rule rerank (recovers n1 only); hybrid recovers n1..n9, dense n2 n3, passages n1..n5.
    vocabulary_mismatch v1..v10, rule hybrid, recovers v1..v5; the other remedies none of it."""
    fails = {"near_miss": qs("n", *range(1, 11)), "vocabulary_mismatch": qs("v", *range(1, 11))}
    cells = {
        "near_miss": {
            "rerank": qs("n", 1),
            "hybrid": qs("n", *range(1, 10)),
            "dense": qs("n", 2, 3),
            "passages": qs("n", 1, 2, 3, 4, 5),
        },
        "vocabulary_mismatch": {"hybrid": qs("v", 1, 2, 3, 4, 5)},
    }
    return built(fails, cells, {"near_miss": "rerank", "vocabulary_mismatch": "hybrid"}, lost=2)


def test_the_recommendation_switches_when_another_remedy_recovers_significantly_more():
    rem, m = switch_world()
    a = class_advice(rem, m).of("near_miss")
    assert (a.rule_remedy, a.recommended_remedy, a.status, a.method) == ("rerank", "hybrid", "better", "holm")
    ev = {e.remedy_id: e for e in a.remedy_evidence}
    # paired against the rule's n1 on the 10 failures: hybrid wins n2..n9 (8), loses none; dense wins n2, n3, loses
    # n1; passages wins n2..n5 (4), loses none. Exact McNemar, two-sided: hybrid 2 * 0.5**8 = 0.0078125; dense
    # n = 3, P(X <= 1) = (1 + 3) / 8, doubled 1.0; passages 2 * 0.5**4 = 0.125.
    assert (ev["hybrid"].wins, ev["hybrid"].losses, ev["dense"].wins, ev["dense"].losses) == (8, 0, 2, 1)
    assert ev["hybrid"].p_value == pytest.approx(0.0078125)
    assert ev["dense"].p_value == pytest.approx(1.0) and ev["passages"].p_value == pytest.approx(0.125)
    # Holm over the m = 3 remedies tried besides the rule's, sorted p: 0.0078125, 0.125, 1.0 -> 3 * 0.0078125 =
    # 0.0234375; max(0.0234375, 2 * 0.125) = 0.25; max(0.25, 1 * 1.0) = 1.0
    assert ev["hybrid"].p_adjusted == pytest.approx(0.0234375)
    assert ev["passages"].p_adjusted == pytest.approx(0.25) and ev["dense"].p_adjusted == pytest.approx(1.0)
    assert ev["rerank"].rule and ev["rerank"].p_value is None and ev["rerank"].p_adjusted is None
    # hybrid on the other class (vocabulary_mismatch): 5 of 10
    assert (ev["hybrid"].recovered, ev["hybrid"].failures) == (9, 10)
    assert (ev["hybrid"].others_recovered, ev["hybrid"].others_failures) == (5, 10)
    assert a.sentence() == (
        "near_miss: rule: rerank recovers 10% (1/10); measured: hybrid recovers 90% of near miss (9/10) vs 50% of "
        "the others (Holm p = 0.0234)."
    )
    d = a.to_dict()
    assert (d["rule_remedy"], d["recommended_remedy"]) == ("rerank", "hybrid")
    assert [e["remedy_id"] for e in d["remedy_evidence"]] == ["rerank", "hybrid", "dense", "passages"]
    assert d["remedy_evidence"][1]["p_adjusted"] == pytest.approx(0.0234375)


def test_findings_put_a_class_under_its_measured_recommendation():
    rem, m = switch_world()
    fs = [failure(q, q.replace("n", "t"), "near_miss") for q in qs("n", *range(1, 11))]
    fs += [failure(q, q.replace("v", "t"), "vocabulary_mismatch") for q in qs("v", *range(1, 11))]
    diag = diagnosis_of(run_of("run", {"n1": ["x"]}), fs, 10, n=40)
    f = findings(diag, rem, m)
    # near_miss follows its advice to hybrid: one hybrid action over both classes; the rule's rerank is no action
    assert [a.remedy_id for a in f] == ["hybrid"]
    (hybrid,) = f
    assert hybrid.classes == ("near_miss", "vocabulary_mismatch")
    # the matrix's cells: near_miss 9 of 10 under hybrid, vocabulary_mismatch 5 of 10; recovered 9 + 5 = 14, the
    # hybrid row's 2 lost hits: net 14 - 2 = 12
    assert hybrid.cells == (("near_miss", 9, 10), ("vocabulary_mismatch", 5, 10))
    assert (hybrid.recovered, hybrid.failures, hybrid.lost_hits, hybrid.net) == (14, 20, 2, 12)
    assert hybrid.recovered_ids == (*qs("n", *range(1, 10)), *qs("v", 1, 2, 3, 4, 5))


def test_the_markdown_report_says_where_the_data_overrules_a_rule():
    from diagnose.data import ValidationReport
    from diagnose.report import markdown_report
    from diagnose.runtime.lazy import pandas as pd

    rem, m = switch_world()
    metrics = pd.DataFrame([{"run": "run", "kind": "your run", "queries": 40, "hit_rate@10": 0.5}])
    md = markdown_report(
        data_label="hand-built", data_lines=[], model="fake", k=10, mode="hit", metrics=metrics, diagnosis=None,
        validation=ValidationReport(), remedies=rem, remedy_matrix=m, advice=class_advice(rem, m),
    )  # fmt: skip
    part = md.split("### Measured advice: where the data overrules a class's rule (holm correction)\n\n", 1)[
        1
    ]
    # near_miss switches to hybrid (the first test); vocabulary_mismatch keeps hybrid, the only remedy that recovers
    # any of it, but hybrid recovers 5/10 = 50% of it and 9/10 = 90% of the other class (near_miss): not specific
    assert part.split("\n\n", 1)[0].splitlines() == [
        "- near_miss: rule: rerank recovers 10% (1/10); measured: hybrid recovers 90% of near miss (9/10) vs 50% of "
        "the others (Holm p = 0.0234).",
        "- vocabulary_mismatch: rule kept: hybrid recovers 50% of vocabulary mismatch (5/10) vs 90% of the others; "
        "the class does not predict the fix.",
    ]


def test_two_close_remedies_keep_the_rules():
    # vocabulary_mismatch v1..v10: rule hybrid recovers v1..v5, dense v1..v4, v6, v7; index_gap g1..g10: rule dense
    # recovers g1..g9, hybrid g1
    fails = {"index_gap": qs("g", *range(1, 11)), "vocabulary_mismatch": qs("v", *range(1, 11))}
    cells = {
        "index_gap": {"dense": qs("g", *range(1, 10)), "hybrid": qs("g", 1)},
        "vocabulary_mismatch": {"hybrid": qs("v", 1, 2, 3, 4, 5), "dense": qs("v", 1, 2, 3, 4, 6, 7)},
    }
    rem, m = built(fails, cells, {"index_gap": "dense", "vocabulary_mismatch": "hybrid"})
    advice = class_advice(rem, m)
    a = advice.of("vocabulary_mismatch")
    # dense against hybrid on the class: wins v6, v7, loses v5: n = 3, P(X <= 1) = 4/8, doubled 1.0; one
    # alternative, so Holm leaves it; hybrid recovers 50% of its class vs 1/10 = 10% of index_gap: confirmed
    dense = a.evidence("dense")
    assert (dense.wins, dense.losses, dense.p_value, dense.p_adjusted) == (2, 1, 1.0, 1.0)
    assert (a.recommended_remedy, a.status) == ("hybrid", "confirmed")
    # index_gap: dense 90% of its class vs 6/10 = 60% of the other; hybrid wins nothing: confirmed
    assert (advice.of("index_gap").recommended_remedy, advice.of("index_gap").status) == (
        "dense",
        "confirmed",
    )
    assert advice.lines() == []  # nothing differs from the rules: no line


def test_nothing_recovers_and_a_rule_that_recovers_nothing():
    # semantic_gap s1..s5: no offline remedy (none); missing_document m1, m2: nothing recovers them; near_miss
    # n1..n5, rule rerank recovers none, passages n1..n3 (3 of 5 = 60%): 3 wins, 0 losses, p = 2 * 0.5**3 = 0.25,
    # Holm over two alternatives (hybrid: 0 wins, p = 1): 0.5 -- not significant, yet the rule recovers nothing and
    # passages recovers >= 20%: passages
    fails = {
        "missing_document": qs("m", 1, 2),
        "near_miss": qs("n", 1, 2, 3, 4, 5),
        "semantic_gap": qs("s", 1),
    }
    cells = {
        "missing_document": {"rerank": [], "passages": [], "hybrid": []},
        "near_miss": {"rerank": [], "passages": qs("n", 1, 2, 3), "hybrid": []},
        "semantic_gap": {"rerank": [], "passages": [], "hybrid": []},
    }
    own = {"missing_document": "none", "near_miss": "rerank", "semantic_gap": "none"}
    advice = class_advice(*built(fails, cells, own))
    gone = advice.of("missing_document")
    assert (gone.recommended_remedy, gone.status, gone.rule_measured) == (None, "nothing", False)
    assert gone.sentence() == (
        "missing_document: rule: none (no offline remedy); measured: no remedy tried recovers any of its 2 failed "
        "queries, nothing recommended (none stays a hypothesis to try)."
    )
    near = advice.of("near_miss")
    assert (near.recommended_remedy, near.status) == ("passages", "rule_empty")
    assert near.evidence("passages").p_adjusted == pytest.approx(0.5)
    assert "measured: passages recovers 60% of near miss (3/5)" in near.sentence()
    assert [x.split(":")[0] for x in advice.lines()] == ["missing_document", "near_miss", "semantic_gap"]


def test_a_rule_that_does_not_predict_its_fix_gives_way_to_a_specific_remedy():
    # diluted d1..d4, rule passages recovers d1, d2 (50%); passages also recovers 8 of index_gap's 10 (80%): not
    # specific. dense recovers d1, d3 of diluted (50%, as many) and 1 of the 10 others (10%): more_specific.
    # dense vs passages on diluted: wins d3, loses d2: p = 1.
    fails = {"diluted": qs("d", 1, 2, 3, 4), "index_gap": qs("g", *range(1, 11))}
    cells = {
        "diluted": {"passages": qs("d", 1, 2), "dense": qs("d", 1, 3)},
        "index_gap": {"passages": qs("g", *range(1, 9)), "dense": qs("g", 1)},
    }
    advice = class_advice(*built(fails, cells, {"diluted": "passages", "index_gap": "dense"}))
    a = advice.of("diluted")
    assert (a.recommended_remedy, a.status) == ("dense", "more_specific")
    # index_gap: its rule dense recovers g1 (10%); passages g1..g8 wins 7, loses 0: 2 * 0.5**7 = 0.015625, one
    # alternative so Holm leaves it, <= 0.05: better
    g = advice.of("index_gap")
    assert g.evidence("passages").p_adjusted == pytest.approx(0.015625)
    assert (g.recommended_remedy, g.status) == ("passages", "better")


@settings(max_examples=60, deadline=None)
@given(
    hst.lists(hst.lists(hst.booleans(), min_size=3, max_size=3), min_size=1, max_size=12), hst.integers(0, 2)
)
def test_never_a_remedy_that_recovers_nothing_while_another_recovers_a_fifth(grid, rule):
    # one class (near_miss), three remedies; row i: which remedies recover query i
    rids = ("rerank", "hybrid", "dense")
    fails = {"near_miss": [f"q{i}" for i in range(len(grid))]}
    cells = {"near_miss": {r: [f"q{i}" for i, row in enumerate(grid) if row[j]] for j, r in enumerate(rids)}}
    a = class_advice(*built(fails, cells, {"near_miss": rids[rule]})).of("near_miss")
    best = max(len(v) for v in cells["near_miss"].values()) / len(grid)
    if a.recommended_remedy is not None:
        assert a.evidence(a.recommended_remedy).recovered > 0
    if best >= MIN_SHARE:
        assert a.recommended_remedy is not None
    if best == 0:
        assert a.status == "nothing"


# ------------------------------------------------------------------------------------------ the faces


@pytest.fixture(scope="module")
def demo_json(tmp_path_factory):
    """``diagnose failures`` on the demo (fake keyword encoder): JSON and text. The command line reads no
    ``DIAGNOSE_ENCODER`` (the app's switch): the encoder is replaced where the commands load it."""
    from diagnose.cli import main
    from diagnose.embed import KeywordEncoder

    mp = pytest.MonkeyPatch()
    mp.setattr("diagnose.embed.load_encoder", lambda *a, **kw: KeywordEncoder())
    mp.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    out = {}
    try:
        for fmt in ("json", "table"):
            with contextlib.redirect_stdout(io.StringIO()) as said:
                run = str(DEMO / "runs" / "ann_minilm.trec")
                assert main(["failures", "--data", str(DEMO), "--run", run, "--format", fmt]) == 0
            out[fmt] = said.getvalue()
    finally:
        mp.undo()
    return out


def check_advice_json(payload: dict) -> None:
    """The advice of a ``diagnose failures`` JSON: one entry per class of the matrix with the three keys, each
    recommendation what its evidence supports, and the findings' classes under their recommended remedy."""
    advice, matrix = payload["advice"], payload["remedy_matrix"]
    assert advice["method"] == "holm" and list(advice["classes"]) == list(matrix)
    for cls, a in advice["classes"].items():
        assert {"rule_remedy", "recommended_remedy", "remedy_evidence", "status", "sentence"} <= set(a)
        ev = {e["remedy_id"]: e for e in a["remedy_evidence"]}
        assert {r: {"failures": e["failures"], "recovered": e["recovered"]} for r, e in ev.items()} == matrix[
            cls
        ]
        rec = a["recommended_remedy"]
        if rec is not None and rec != a["rule_remedy"]:
            e = ev[rec]
            assert e["recovered"] > 0
            assert (e["p_adjusted"] <= 0.05 and e["wins"] > e["losses"]) or a["status"] in (
                "rule_empty",
                "more_specific",
            )
    advised = {c: a["recommended_remedy"] for c, a in advice["classes"].items()}
    for act in payload["findings"]["actions"]:
        if act["remedy_id"] not in ("judge", "crossencoder"):
            assert all(advised[c] == act["remedy_id"] for c in act["classes"])
    # every key the JSON had before is still there, findings last
    assert list(payload)[-1] == "findings" and {"remedies", "remedy_matrix", "recommendations"} <= set(
        payload
    )


def test_the_json_and_the_text_carry_the_advice(demo_json):
    payload = json.loads(demo_json["json"])
    check_advice_json(payload)
    text = demo_json["table"].splitlines()
    differing = [
        a for a in payload["advice"]["classes"].values() if a["status"] not in ("confirmed", "judging")
    ]
    assert differing  # the keyword encoder's demo has classes whose rule's remedy the matrix overrules
    head = text.index(next(x for x in text if x.startswith("measured advice (per class")))
    assert text[head + 1 : head + 1 + len(differing)] == [f"- {a['sentence']}" for a in differing]
    assert all(
        x.startswith(f"- {a['class']}: rule") for x, a in zip(text[head + 1 :], differing, strict=False)
    )


@pytest.mark.real_model
def test_the_advice_with_the_default_model_through_the_cli(model_cache, monkeypatch):
    from diagnose.cli import main

    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(model_cache))
    with contextlib.redirect_stdout(io.StringIO()) as said:
        run = str(DEMO / "runs" / "ann_minilm.trec")
        assert main(["failures", "--data", str(DEMO), "--run", run, "--format", "json"]) == 0
    payload = json.loads(said.getvalue())
    check_advice_json(payload)
    # the demo's ANN run loses 21 index gaps that exact search finds (demo_corpus/README): dense is confirmed
    assert payload["advice"]["classes"]["index_gap"]["recommended_remedy"] == "dense"
