"""``diagnose evaluate --format markdown`` is a compact report (issue 23 item 7): the headline metrics per run, the
comparisons with their significance, the gate, every metric folded in <details>."""

from __future__ import annotations

from diagnose.cli import main

QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\td3\t1\n"
GOOD = "q1 Q0 d1 1 3.0 good\nq1 Q0 d2 2 2.0 good\nq1 Q0 d9 3 1.0 good\nq2 Q0 d3 1 5.0 good\nq2 Q0 d8 2 4.0 good\n"
BAD = "q1 Q0 d9 1 3.0 bad\nq1 Q0 d8 2 2.0 bad\nq1 Q0 d1 3 1.0 bad\nq2 Q0 d8 1 5.0 bad\nq2 Q0 d7 2 4.0 bad\n"


def test_markdown_is_headline_comparisons_gate_and_folded_details(tmp_path, capsys):
    for name, text in (("qrels.tsv", QRELS), ("good.trec", GOOD), ("bad.trec", BAD)):
        (tmp_path / name).write_text(text)
    code = main(
        [
            "evaluate",
            "--qrels",
            str(tmp_path / "qrels.tsv"),
            "--run",
            str(tmp_path / "good.trec"),
            "--run",
            str(tmp_path / "bad.trec"),
            "--k",
            "1,3",
            "--format",
            "markdown",
            "--fail-under",
            "ndcg@3=0.6",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    head, details = out.split("<details>")
    # the headline table: the compared metrics (ndcg@3, recall@3, mrr) then hit_rate@3 and map, not all 15
    header = next(line for line in head.splitlines() if line.startswith("| run |"))
    assert header == "| run | ndcg@3 | recall@3 | mrr | hit_rate@3 | map |"
    # bad: q1 ndcg@3 = 1 / (2 + 1/log2(3)) = 0.38008, q2 = 0 -> mean 0.1900; good finds everything first: 1.0000
    bad_row = next(line for line in head.splitlines() if line.startswith("| bad |"))
    assert bad_row.split(" | ")[1].startswith("0.1900")
    # the comparison of bad with the reference good, with its significance column
    assert "**Compared with `good`**" in head and "| significant |" in head
    assert any(line.startswith("| bad | ndcg@3 | -0.8100 |") for line in head.splitlines())
    # the gate and its flag; every metric in the details (precision@1 is not a headline metric)
    assert "**CI gate**: failed" in head and "ndcg@3 = 0.1900 is below the bound 0.6 (--fail-under)" in head
    assert (
        "precision@1" not in head and "| precision@1 |" in details and details.rstrip().endswith("</details>")
    )
