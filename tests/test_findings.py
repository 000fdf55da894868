"""The findings (diagnose/whatif/findings.py): the ranked actions read from the remedies and the remedy matrix."""

from __future__ import annotations

import contextlib
import dataclasses
import html
import io
import json
import re
from pathlib import Path

import pytest
from test_remedies import diagnosis_of, failure, keyword_space, qrels_of, run_of

from diagnose.data import Dataset
from diagnose.whatif.findings import findings
from diagnose.whatif.matrix import remedy_matrix
from diagnose.whatif.remedies import prove_remedies

DEMO = Path(__file__).resolve().parents[1] / "demo_corpus"


def world(with_q1: bool = True):
    """k = 1, hit mode (test_remedies.matrix_world, plus a label gap and a semantic gap):
    q1 vocabulary_mismatch (t1): run [a, t1]; bm25 [t1]; dense [t1]
    q4 vocabulary_mismatch (t4): run [c4];    bm25 [e4]; dense [f4]
    q2 index_gap (t2):           run [b, t2]; bm25 [x];  dense [t2]
    q3 near_miss (t3):           run [a3, b3, t3];       dense [z]; only q3 has a vector
    q5 label_gap (t5), the run's d5 an unjudged near-duplicate: run [d5]; no bm25 or dense list
    q6 semantic_gap (t6): run [g6]; no remedy offline
    The run hits no query at k=1, so no remedy loses a hit. Recovered (test_remedies.matrix_world's docstring):
    hybrid q1; dense q1 and q2 (q2 of its own class index_gap); rerank q3.
    """
    docs = {"a3": "cafeteria menu", "b3": "holiday policy", "t3": "vpn token reset guide"}
    space = keyword_space(docs, {"q3": "vpn token reset"})
    qs = {"q1": "t1", "q2": "t2", "q3": "t3", "q4": "t4", "q5": "t5", "q6": "t6"}
    ds = Dataset(qrels=qrels_of({q: {t: 1} for q, t in qs.items()}))
    lists = {"q1": ["a", "t1"], "q2": ["b", "t2"], "q3": ["a3", "b3", "t3"], "q4": ["c4"], "q5": ["d5"]}
    run = run_of("run", {**lists, "q6": ["g6"]})
    bm25 = run_of("bm25", {"q1": ["t1"], "q2": ["x"], "q4": ["e4"]})
    dense = run_of("dense", {"q1": ["t1"], "q2": ["t2"], "q3": ["z"], "q4": ["f4"]})
    gap = dataclasses.replace(failure("q5", "t5", "label_gap"), duplicate_doc_id="d5")
    fs = [
        *([failure("q1", "t1", "vocabulary_mismatch")] if with_q1 else []),
        failure("q4", "t4", "vocabulary_mismatch"),
        failure("q2", "t2", "index_gap"),
        failure("q3", "t3", "near_miss"),
        gap,
        failure("q6", "t6", "semantic_gap"),
    ]
    diag = diagnosis_of(run, fs, 1, n=6)
    # kind unknown: a hand-built list, not ordered by the model's cosine (a dense run's near miss is remedied by hybrid)
    rem = prove_remedies(ds, run, diag, space=space, bm25_run=bm25, dense_run=dense, kind="unknown")
    return diag, rem, remedy_matrix(ds.qrels, diag, rem)


def test_findings_rank_the_measured_actions_by_net_gain_and_judging_last():
    diag, rem, m = world()
    f = findings(diag, rem, m)
    # net = recovered - lost: dense 1 - 0, hybrid 1 - 0, rerank 1 - 0 (ties); then mean hit_rate@1 difference over
    # the 6 golden queries: dense hits q1, q2 -> 2/6; hybrid q1 -> 1/6; rerank q3 -> 1/6; hybrid and rerank tie
    # again, and on p (one +1 difference each: exact sign flips, p = 2/2 = 1), so the remedy id decides
    assert [a.remedy_id for a in f] == ["dense", "hybrid", "rerank", "judge"]
    assert [a.rank for a in f] == [1, 2, 3, 4]
    dense, hybrid, rerank, judge = f
    assert (dense.recovered, dense.lost_hits, dense.net, dense.classes) == (1, 0, 1, ("index_gap",))
    assert dense.mean_diff == pytest.approx(2 / 6)
    # dense: two +1 differences, exact test over 4 sign vectors, |sum| >= 2 for 2 of them: p = 2/4
    assert dense.p_value == pytest.approx(0.5)
    assert (hybrid.recovered, hybrid.failures, hybrid.recovered_ids) == (1, 2, ("q1",))
    assert rerank.classes == ("near_miss",) and rerank.cost == "configuration change"
    # 6 failed queries in all; semantic_gap has no offline remedy: no action
    assert f.total == 6 and all("semantic_gap" not in a.classes for a in f)
    # the label gap: the pair to judge is the query and the near-duplicate the run retrieved; nothing measured
    assert judge.pairs == (("q5", "d5"),) and judge.recovered is None and judge.net is None
    assert judge.cost == "judging"


def test_findings_equal_the_remedies_and_the_matrix():
    diag, rem, m = world()
    for a in findings(diag, rem, m):
        if a.remedy_id == "judge":
            continue
        rows = [r for r in rem.rows if r.remedy_id == a.remedy_id and r.failures]
        assert a.classes == tuple(r.cls for r in rows)
        assert (a.lost_hits, a.mean_diff, a.p_value) == (
            rows[0].lost_hits,
            rows[0].mean_diff,
            rows[0].p_value,
        )
        # no failed query is in two of an action's classes here, so recovered is the sum of the matrix's cells
        assert a.recovered == sum(m.cell(c, a.remedy_id).recovered for c in a.classes)
        assert a.cells == tuple(
            (c, m.cell(c, a.remedy_id).recovered, m.cell(c, a.remedy_id).failures) for c in a.classes
        )
        assert a.recovered == sum(r.recovered for r in rows)


def test_an_action_that_recovers_nothing_is_not_advice():
    # without q1, hybrid recovers none of the vocabulary mismatches (q4: RRF puts e4 first, not relevant)
    diag, rem, m = world(with_q1=False)
    f = findings(diag, rem, m)
    assert rem.row("vocabulary_mismatch").recovered == 0
    assert [a.remedy_id for a in f] == ["dense", "rerank", "judge"]


def test_the_findings_as_lines_markdown_html_and_dict():
    diag, rem, m = world()
    f = findings(diag, rem, m)
    lines = f.lines()
    assert lines[0] == "What to fix first in 'run' (k=1, 6 failed queries), ranked by net gain:"
    assert lines[1] == (
        "1. Fix the ANN index: exact search finds these. Recovers 1 of 6 failed queries, breaks 0 hits, p = 0.5. "
        "[index_gap; re-index]"
    )
    assert lines[4].startswith("4. Judge these pairs: 1 pair ")
    assert len(lines) <= 15 and all(len(x.split()) < 25 for x in lines)
    d = f.to_dict()
    assert [a["remedy_id"] for a in d["actions"]] == ["dense", "hybrid", "rerank", "judge"]
    assert d["actions"][3]["pairs"] == [{"query_id": "q5", "doc_id": "d5"}]
    assert f._repr_html_().count("<li>") == 4
    assert f._repr_markdown_().splitlines()[2] == lines[1]


def test_a_change_that_breaks_as_many_hits_as_it_recovers_is_not_advised():
    # test_remedies' first world, k = 1: hybrid (RRF with BM25) recovers q1 and loses q2's hit: net 1 - 1 = 0
    ds = Dataset(qrels=qrels_of({"q1": {"t1": 1}, "q2": {"t2": 1}, "q3": {"t3": 1}}))
    run = run_of("run", {"q1": ["a", "t1"], "q2": ["t2", "b"], "q3": ["c", "d"]})
    bm25 = run_of("bm25", {"q1": ["t1"], "q2": ["b", "x"], "q3": ["e"]})
    fs = [failure("q1", "t1", "vocabulary_mismatch"), failure("q3", "t3", "vocabulary_mismatch")]
    diag = diagnosis_of(run, fs, 1, n=3)
    rem = prove_remedies(ds, run, diag, bm25_run=bm25)
    f = findings(diag, rem, remedy_matrix(ds.qrels, diag, rem))
    assert list(f) == [] and [a.remedy_id for a in f.rejected] == ["hybrid"]
    (hybrid,) = f.rejected
    assert (hybrid.recovered, hybrid.lost_hits, hybrid.net, hybrid.rank) == (1, 1, 0, 0)
    # hit_rate@1 differences +1 (q1), -1 (q2), 0: exact sign flips, p = 4/4 = 1
    assert f.lines()[1:] == [
        "No change measured here recovers more failures than it breaks hits.",
        "Not advised: add BM25 (hybrid RRF). Recovers 1, breaks 1 hit, p = 1. [vocabulary_mismatch; re-index]",
    ]
    assert f.to_dict()["rejected"][0]["net"] == 0


def test_findings_refuse_remedies_of_another_run():
    diag, rem, m = world()
    other = dataclasses.replace(diag, run="other")
    with pytest.raises(ValueError, match="other"):
        findings(other, rem, m)


# ------------------------------------------------------------------------------------------ the faces agree

DEMO_RUN = str(DEMO / "runs" / "ann_minilm.trec")


@pytest.fixture(scope="module")
def demo_cli(tmp_path_factory):
    """``diagnose failures`` on the demo (fake keyword encoder) as text and JSON."""
    from diagnose.cli import main

    mp = pytest.MonkeyPatch()
    mp.setenv("DIAGNOSE_ENCODER", "keyword")
    mp.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    out = {}
    try:
        for fmt in ("table", "json"):
            path = tmp_path_factory.mktemp("out") / f"failures.{fmt}"
            with open(path, "w") as fh, contextlib.redirect_stdout(fh):
                assert main(["failures", "--data", str(DEMO), "--run", DEMO_RUN, "--format", fmt]) == 0
            out[fmt] = path.read_text()
        page = tmp_path_factory.mktemp("report") / "report.html"
        with contextlib.redirect_stdout(io.StringIO()) as said:
            assert main(["report", "--data", str(DEMO), "--run", DEMO_RUN, "--out", str(page)]) == 0
        out["html"], out["said"] = page.read_text(), said.getvalue()
    finally:
        mp.undo()
    return out


def test_the_cli_text_and_json_lead_with_the_same_findings(demo_cli):
    payload = json.loads(demo_cli["json"])
    f = payload["findings"]
    sentences = [x["sentence"] for x in f["actions"]]
    assert len(sentences) >= 2  # the demo has things to fix
    text = demo_cli["table"].splitlines()
    rejected = [x["sentence"] for x in f["rejected"]]
    head = text[: len(sentences) + len(rejected) + 1]
    assert len(head) <= 15
    assert head[0].startswith(f"What to fix first in 'ann_minilm' (k=10, {f['total']} failed")
    assert head[1:] == [f"{i}. {s}" for i, s in enumerate(sentences, 1)] + rejected
    assert text[len(head)] == ""
    assert all(
        x["net"] <= 0 and x["rank"] == 0 and x["sentence"].startswith("Not advised: ") for x in f["rejected"]
    )
    # the actions' numbers are the remedies' and the matrix's of the same JSON
    # (each class under the remedy its measured advice recommends: diagnose/whatif/advice.py, tests/test_advice.py)
    rows, matrix = payload["remedies"]["remedies"], payload["remedy_matrix"]
    advised = {c: a["recommended_remedy"] for c, a in payload["advice"]["classes"].items()}
    nets = []
    for act in f["actions"]:
        if act["remedy_id"] == "judge":
            assert act["pairs"] and act["recovered"] is None
            continue
        rid = act["remedy_id"]
        mine = [r for r in rows if r["remedy_id"] == rid and r["failures"] and advised[r["class"]] == rid]
        assert act["classes"] == [c for c in advised if advised[c] == rid]
        own = next(r for r in rows if r["remedy_id"] == rid and r["recovered"] is not None)
        for key in ("lost_hits", "mean_diff", "p_value"):
            assert act[key] == own[key]
        # a class advised its rule's remedy: the row's recovered ids; every class: the matrix's cell
        assert set(i for r in mine for i in r["recovered_ids"]) <= set(act["recovered_ids"])
        cells = [matrix[c][rid]["recovered"] for c in act["classes"]]
        assert max(cells) <= act["recovered"] <= sum(cells)
        assert act["cells"] == [{"class": c, **matrix[c][rid]} for c in act["classes"]]
        assert act["net"] == act["recovered"] - act["lost_hits"]
        nets.append(act["net"])
    assert nets == sorted(nets, reverse=True)
    assert f["actions"][-1]["remedy_id"] == "judge"  # the demo has label gaps: judged last
    # every other key of the JSON is the one it was: findings is added, last
    assert list(payload)[-1] == "findings"


def test_the_report_opens_with_the_same_findings_as_the_cli(demo_cli):
    page = demo_cli["html"]
    actions = json.loads(demo_cli["json"])["findings"]["actions"]
    first = page.split("<section id='findings'>", 1)
    assert "<section" not in first[0]  # the findings are the first section
    items = re.findall(r"<li>(.*?)</li>", first[1].split("</section>", 1)[0])
    assert items == [html.escape(a["sentence"]) for a in actions]
    rejected = json.loads(demo_cli["json"])["findings"]["rejected"]
    assert all(f"<p>{html.escape(a['sentence'])}</p>" in first[1].split("</section>", 1)[0] for a in rejected)
    # the command says where it wrote and the first action, as the text report's line 2 says it
    assert demo_cli["said"].startswith("Wrote ") and demo_cli["said"].rstrip().endswith(
        actions[0]["sentence"]
    )
    # three charts (metrics, failure classes, remedy matrix), one <svg> each, inline
    assert page.count("<figure>") == 3 and page.count("<svg") == 3
    assert len(page.encode()) < 5_000_000


def test_a_fine_tuned_model_in_the_matrix_is_an_action_after_the_measured_ones():
    from diagnose.data import Dataset

    diag, rem, _ = world()
    # a fine-tuned run that finds q6's target t6 (semantic_gap, whose record names finetune as its measurement)
    # and q2's t2: the matrix's finetune column owns semantic_gap; its cell: 1 of 1
    tuned = run_of("tuned", {"q6": ["t6"], "q2": ["t2"]})
    qs = {"q1": "t1", "q2": "t2", "q3": "t3", "q4": "t4", "q5": "t5", "q6": "t6"}
    qrels = Dataset(qrels=qrels_of({q: {t: 1} for q, t in qs.items()})).qrels
    m = remedy_matrix(qrels, diag, rem, {"finetune": ("the fine-tuned model (folds)", tuned)})
    f = findings(diag, rem, m)
    assert [a.remedy_id for a in f] == ["dense", "hybrid", "rerank", "finetune", "judge"]
    tuned_action = f[3]
    assert (tuned_action.recovered, tuned_action.cells) == (1, (("semantic_gap", 1, 1),))
    assert tuned_action.lost_hits is None and tuned_action.cost == "training"
    assert tuned_action.sentence() == (
        "Fine-tune the model. Recovers 1 of 6 failed queries; hits broken not measured here. [semantic_gap; training]"
    )
