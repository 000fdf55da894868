"""The words a newcomer reads (issue 23 item 4): the margin sentence explains the sign it shows, the gate names the
CLI flag, one human label for the model (the fingerprint in its own field), a dict run's row is named."""

from __future__ import annotations

import json

import numpy as np
import pytest

from diagnose.cli import main
from diagnose.data import Dataset
from diagnose.failures.diagnosis import calibrate
from diagnose.io.convert import as_qrels, as_run
from diagnose.search.space import VectorSpace
from diagnose.ui.text import margin_words


def test_the_margin_sentence_explains_the_sign_it_shows():
    # margin = cos(query, #10) - cos(query, target): -0.019 means the target is the closer one
    assert margin_words(-0.019, 10).startswith(
        "negative: the target is closer to the query than the #10 document"
    )
    assert margin_words(0.2, 10).startswith("positive: the #10 document is closer")
    assert margin_words(0.0004, 10).startswith("zero at this precision")  # shown as +0.000


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n")
    (tmp_path / "bad.trec").write_text("q1 Q0 d9 1 3.0 bad\nq1 Q0 d1 2 2.0 bad\nq2 Q0 d8 1 5.0 bad\n")
    return tmp_path


def test_the_gate_names_the_cli_flag_as_the_readme_shows(files, capsys):
    code = main(
        [
            "evaluate",
            "--qrels",
            str(files / "qrels.tsv"),
            "--run",
            str(files / "bad.trec"),
            "--fail-under",
            "mrr=0.6",
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    # bad: q1 first relevant at rank 2 -> RR 0.5; q2 none -> 0; mean 0.25 < 0.6
    assert code == 1
    assert "mrr = 0.2500 is below the bound 0.6 (--fail-under)" in err and "(fail_under)" not in err
    assert json.loads(out)["gate"]["failures"] == [
        "run 'bad': mrr = 0.2500 is below the bound 0.6 (--fail-under)"
    ]


def test_the_calibration_names_the_model_by_its_label_and_keeps_the_fingerprint():
    run = as_run({"q1": {"d1": 1.0}}, name="r")
    ds = Dataset(qrels=as_qrels({"q1": {"d1": 1}}), runs={"r": run})
    vec = np.array([[1.0, 0.0]], dtype=np.float32)
    space = VectorSpace.from_arrays(
        "st-sha256:abc+bf16", ["d1"], vec, ["q1"], vec, label="all-MiniLM-L6-v2, bf16"
    )
    cal = calibrate(ds, run, space, k=10).to_dict()
    assert (cal["model"], cal["model_fingerprint"]) == ("all-MiniLM-L6-v2, bf16", "st-sha256:abc+bf16")
    unlabelled = VectorSpace.from_arrays("precomputed:v.npy", ["d1"], vec, ["q1"], vec)
    assert calibrate(ds, run, unlabelled, k=10).model == "precomputed:v.npy"  # no label: its identity
