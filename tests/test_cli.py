"""The CLI contract: output shapes, exit codes, the CI gate."""

from __future__ import annotations

import json

import pytest

from diagnose.cli import main

COMPARISON_KEYS = {
    "metric",
    "run",
    "reference",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_ttest",
    "p_randomization",
    "p_wilcoxon",
    "p_holm",
    "wins",
    "ties",
    "losses",
}


@pytest.fixture
def files(tmp_path):
    """Two queries, graded qrels; run `good` finds everything first, run `bad` ranks relevant docs last."""
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\td3\t1\n")
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "alpha", "metadata": {"area": "it"}}\n'
        '{"_id": "q2", "text": "beta", "metadata": {"area": "hr"}}\n'
    )
    (tmp_path / "good.trec").write_text(
        "q1 Q0 d1 1 3.0 good\nq1 Q0 d2 2 2.0 good\nq1 Q0 d9 3 1.0 good\nq2 Q0 d3 1 5.0 good\nq2 Q0 d8 2 4.0 good\n"
    )
    (tmp_path / "bad.trec").write_text(
        "q1 Q0 d9 1 3.0 bad\nq1 Q0 d8 2 2.0 bad\nq1 Q0 d1 3 1.0 bad\nq2 Q0 d8 1 5.0 bad\nq2 Q0 d7 2 4.0 bad\n"
    )
    return tmp_path


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_evaluate_json_contract(files, capsys):
    code, out, _ = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        files / "qrels.tsv",
        "--run",
        files / "good.trec",
        "--run",
        f"b={files / 'bad.trec'}",
        "--k",
        "1,3",
        "--per-query",
        "--format",
        "json",
    )
    assert code == 0
    payload = json.loads(out)
    assert set(payload["runs"]) == {"good", "b"}
    good = payload["runs"]["good"]
    # good: q1 P@1 = 1, q2 P@1 = 1 -> 1.0; bad: q1 first relevant at 3 -> P@1 0, q2 none -> 0
    assert good["aggregate"]["precision@1"] == 1.0
    assert payload["runs"]["b"]["aggregate"]["precision@1"] == 0.0
    # bad q1: d1 (grade 2) at rank 3: DCG@3 = 2/log2(4) = 1; IDCG@3 = 2/1 + 1/log2(3) = 2.6309; q2: 0
    assert payload["runs"]["b"]["per_query"]["q1"]["ndcg@3"] == pytest.approx(
        1 / (2 + 1 / 1.5849625007211562)
    )
    assert set(good["per_query"]) == {"q1", "q2"}
    assert payload["comparisons"] and set(payload["comparisons"][0]) >= COMPARISON_KEYS
    assert payload["gate"] == {"passed": True, "failures": []}
    # b vs good at k=3: q1 (d1 at rank 3) still a hit, q2 (nothing relevant) broken
    assert payload["query_changes"]["b"] == {"metric": "hit_rate@3", "fixed": [], "broken": ["q2"]}


def test_evaluate_without_per_query_has_no_per_query(files, capsys):
    code, out, _ = run_cli(
        capsys, "evaluate", "--qrels", files / "qrels.tsv", "--run", files / "good.trec", "--format", "json"
    )
    assert code == 0 and "per_query" not in json.loads(out)["runs"]["good"]


def test_markdown_table(files, capsys):
    code, out, _ = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        files / "qrels.tsv",
        "--run",
        files / "good.trec",
        "--run",
        files / "bad.trec",
        "--metrics",
        "ndcg@3,mrr",
        "--format",
        "markdown",
    )
    assert code == 0
    lines = out.strip().splitlines()
    start = lines.index("| run | ndcg@3 | mrr |")  # after a one-line summary (the compact report, issue 23)
    assert lines[start + 2].startswith("| good | 1.0000")  # with its band
    assert len(lines) >= start + 4


def test_fail_under_gate(files, capsys):
    code, _, err = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        files / "qrels.tsv",
        "--run",
        files / "bad.trec",
        "--fail-under",
        "ndcg@3=0.6",
    )
    assert code == 1
    # bad: q1 ndcg@3 = 1 / (2 + 1/log2(3)) = 0.38008, q2 = 0 -> mean 0.19004
    assert "ndcg@3 = 0.1900 is below the bound 0.6" in err
    code, _, _ = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        files / "qrels.tsv",
        "--run",
        files / "good.trec",
        "--fail-under",
        "ndcg@3=0.6",
    )
    assert code == 0


def test_max_drop_gate_with_compare_to(files, capsys):
    code, out, err = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        files / "qrels.tsv",
        "--run",
        f"new={files / 'bad.trec'}",
        "--compare-to",
        f"release={files / 'good.trec'}",
        "--max-drop",
        "recall@3=0.01",
        "--format",
        "json",
    )
    assert code == 1
    payload = json.loads(out)
    # release recall@3 = 1; new: q1 1/2, q2 0 -> 0.25; drop 0.75 > 0.01
    assert "recall@3 = 0.2500 dropped 0.7500 below the reference 'release'" in err
    assert payload["reference"] == "release"
    cmp = [c for c in payload["comparisons"] if c["metric"] == "recall@3"][0]
    assert cmp["run"] == "new" and cmp["reference"] == "release"
    assert cmp["mean_diff"] == pytest.approx(-0.75)
    assert (cmp["wins"], cmp["ties"], cmp["losses"]) == (0, 0, 2)
    assert payload["gate"]["passed"] is False


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["evaluate", "--run", "x.trec"], "No golden set"),
        (["evaluate", "--qrels", "QRELS", "--run", "RUN", "--k", "0,5"], "--k expects"),
        (["evaluate", "--qrels", "QRELS", "--run", "RUN", "--fail-under", "ndcg@10"], "METRIC=VALUE"),
        (["evaluate", "--qrels", "QRELS", "--run", "RUN", "--metrics", "nope@3"], "nope"),
        (["evaluate", "--qrels", "QRELS", "--run", "RUN", "--max-drop", "mrr=0.1"], "needs a reference"),
        (["evaluate", "--qrels", "QRELS", "--run", "RUN", "--format", "xml"], "invalid choice"),
        (["evaluate", "--qrels", "QRELS", "--run", "RUN", "--reference", "zzz"], "zzz"),
        (["nonsense"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2_without_traceback(files, capsys, argv, needle):
    argv = [
        str(files / "qrels.tsv") if a == "QRELS" else str(files / "good.trec") if a == "RUN" else a
        for a in argv
    ]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err


def test_param_flags_are_read_from_the_parser_with_named_exceptions():
    from diagnose.cli.shared import PARAM_FLAG_EXCEPTIONS, param_flags

    flags = param_flags()
    # named like the dest of their flag: read from the parser (the hand table listed each of these)
    assert flags["rrf_k"] == "--rrf-k" and flags["filter_field"] == "--filter-field"
    assert (
        flags["retriever_timeout"] == "--retriever-timeout"
        and flags["pairs_per_query"] == "--pairs-per-query"
    )
    assert flags["remedies"] == "--remedies"  # --remedies/--no-remedies: the first option string
    # a library name that differs from the dest: the exception, which wins over the parser's own dest
    assert flags["seed_cosine"] == "--seed-threshold" and flags["slice_by"] == "--slice"
    assert flags["corpus"] == "--corpus (or --data)"
    # every flag an exception names is a flag of some command (a renamed flag fails here)
    options = {o for p in _subparsers().values() for a in p._actions for o in a.option_strings}
    for param, text in PARAM_FLAG_EXCEPTIONS.items():
        for flag in text.split(" ")[0].split("/"):
            assert flag in options, (param, flag)


def test_a_library_error_names_the_flag_of_its_parameter(files, capsys):
    # --rrf-k 0: fuse's check raises DataError(param="rrf_k"), which main prefixes with the flag from the parser
    run = str(files / "good.trec")
    code, _, err = run_cli(capsys, "fuse", "--qrels", str(files / "qrels.tsv"), "--run", run, "--run", f"b={run}",
                           "--rrf-k", "0")  # fmt: skip
    assert code == 2 and err.startswith("error: --rrf-k: ")


def test_no_help_text_prints_a_doubled_percent():
    # argparse %-formats help strings but not descriptions: a description written "95%%" printed "95%%" to users
    for name, sub in _subparsers().items():
        assert "%%" not in sub.format_help(), name


def _subparsers():
    from diagnose.cli.parser import build_parser, subcommand_parsers

    return subcommand_parsers(build_parser())


def test_slices(files, capsys):
    code, out, _ = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        files / "qrels.tsv",
        "--queries",
        files / "queries.jsonl",
        "--run",
        files / "bad.trec",
        "--metrics",
        "recall@3",
        "--slice",
        "area",
        "--format",
        "json",
    )
    assert code == 0
    rows = {r["area"]: r for r in json.loads(out)["slices"]}
    assert rows["it"]["recall@3"] == 0.5 and rows["it"]["n"] == 1  # q1: d1 found in top 3, d2 not
    assert rows["hr"]["recall@3"] == 0.0


def test_fuse(files, capsys):
    code, out, _ = run_cli(
        capsys,
        "fuse",
        "--qrels",
        files / "qrels.tsv",
        "--run",
        files / "good.trec",
        "--run",
        files / "bad.trec",
        "--k",
        "1",
        "--format",
        "json",
    )
    assert code == 0
    fusions = json.loads(out)["fusions"]
    assert fusions[0]["fusion"] == "rrf(k=60)"
    assert all({"recovers_good", "loses_good", "recovers_bad", "loses_bad"} <= set(f) for f in fusions)


def test_rerank_report(files, capsys):
    code, out, _ = run_cli(
        capsys,
        "rerank",
        "--qrels",
        files / "qrels.tsv",
        "--candidates",
        files / "bad.trec",
        "--reranked",
        files / "good.trec",
        "--depth",
        "3",
        "--k",
        "1",
        "--format",
        "json",
    )
    assert code == 0
    rep = json.loads(out)
    # candidates' recall@3: q1 1/2, q2 0 -> 0.25 is the ceiling of a reranker of them
    assert rep["ceiling_recall"] == pytest.approx(0.25)
    assert sorted(rep["recovered"]) == ["q1", "q2"] and rep["introduced"] == []


def test_failures_with_precomputed_vectors(tmp_path, capsys):
    """`diagnose failures` on the user's own vectors: no model is loaded, the JSON contract holds."""
    import numpy as np

    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": d, "title": "", "text": t}) + "\n"
            for d, t in [("a", "alpha page"), ("b", "beta page"), ("t", "reset the vpn token")]
        )
    )
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "vpn token reset"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\tt\t2\n")
    (tmp_path / "run.trec").write_text("q Q0 a 1 2.0 r\nq Q0 b 2 1.0 r\n")
    # q = (1,0,0) and t = (1,0,0): exact dense search ranks t first, the run never returned it -> index_gap
    np.save(tmp_path / "docs.npy", np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=np.float32))
    np.save(tmp_path / "queries.npy", np.array([[1, 0, 0]], dtype=np.float32))
    (tmp_path / "doc_ids.txt").write_text("a\nb\nt\n")
    (tmp_path / "query_ids.txt").write_text("q\n")
    code, out, err = run_cli(
        capsys,
        "failures",
        "--data",
        tmp_path,
        "--run",
        tmp_path / "run.trec",
        "--k",
        "1",
        "--format",
        "json",
        "--doc-embeddings",
        tmp_path / "docs.npy",
        "--doc-ids",
        tmp_path / "doc_ids.txt",
        "--query-embeddings",
        tmp_path / "queries.npy",
        "--query-ids",
        tmp_path / "query_ids.txt",
    )
    assert code == 0, err
    payload = json.loads(out)
    (f,) = payload["failures"]
    assert f["class"] == "index_gap" and f["dense_rank"] == 1 and f["run_rank"] is None
    assert f["cosine"] == pytest.approx(1.0) and f["bm25_rank"] == 1
    assert payload["class_counts"]["index_gap"] == 1
    assert payload["threshold"]["seed"] == 0.75
    # the index_gap remedy is exact dense search: t is the nearest document, so it recovers the one failure
    gap = next(r for r in payload["remedies"]["remedies"] if r["class"] == "index_gap")
    assert gap["failures"] == 1 and gap["recovered"] == 1 and gap["lost_hits"] == 0
    # the remedy matrix: {class: {remedy_id: {failures, recovered}}}, classes with failures only; its diagonal
    # (index_gap under its own remedy) is the remedy table's row
    matrix = payload["remedy_matrix"]
    assert list(matrix) == ["index_gap"] and gap["remedy_id"] in matrix["index_gap"]
    assert matrix["index_gap"][gap["remedy_id"]] == {"failures": 1, "recovered": 1}
    assert all(set(cell) == {"failures", "recovered"} for cell in matrix["index_gap"].values())
    assert len(payload["remedy_matrix_sentences"]) == 1


def test_failures_needs_texts(files, capsys):
    code, _, err = run_cli(capsys, "failures", "--qrels", files / "qrels.tsv", "--run", files / "good.trec")
    assert code == 2 and "corpus" in err and "Traceback" not in err


def test_a_live_retriever_from_the_command_line(tmp_path, capsys, monkeypatch):
    """--retriever NAME=module:attr runs the user's retriever (here a factory of a callable over a tiny index) and
    --write-runs saves what it returned, which scores the same when read back as a file."""
    demo = __import__("pathlib").Path(__file__).resolve().parents[1] / "demo_corpus"
    (tmp_path / "my_rag_cli.py").write_text(
        "from pathlib import Path\n"
        "from diagnose import load\n"
        "from diagnose.lexical import BM25Index\n"
        f"_ds = load({str(demo)!r})\n"
        "_index = BM25Index.build(_ds.corpus.texts(), list(_ds.corpus.ids))\n"
        "def make():\n"
        "    def retrieve(text):\n"
        "        if 'password' in text.lower():\n"
        "            raise RuntimeError('backend timeout')\n"
        "        return _index.search([text], 10)[0]\n"
        "    return retrieve\n"
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(
        capsys,
        "evaluate",
        "--data",
        demo,
        "--retriever",
        "live=my_rag_cli:make",
        "--write-runs",
        tmp_path / "runs",
        "--format",
        "json",
    )
    assert code == 0, err
    payload = json.loads(out)
    live = payload["runs"]["live"]
    assert live["latency"]["latency_p50_ms"] > 0
    errors = [w for w in payload["warnings"] if w["code"] == "retriever_error"]
    assert errors and errors[0]["count"] >= 1 and "backend timeout" in errors[0]["examples"][0]
    written = tmp_path / "runs" / "live.trec"
    assert written.is_file()
    code, out, _ = run_cli(capsys, "evaluate", "--data", demo, "--run", f"live={written}", "--format", "json")
    assert code == 0
    assert json.loads(out)["runs"]["live"]["aggregate"] == live["aggregate"]


def test_a_retriever_spec_without_module_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, "evaluate", "--qrels", "x.tsv", "--retriever", "live")
    assert code == 2 and "NAME=module:attr" in err


def test_risk_ranks_unlabelled_queries_and_validates_on_the_golden_set(files, capsys):
    # without a golden set: every run query ranked, no validation
    code, out, _ = run_cli(capsys, "risk", "--run", files / "bad.trec", "--k", "2", "--format", "json")
    assert code == 0
    payload = json.loads(out)
    assert sorted(q["query_id"] for q in payload["queries"]) == ["q1", "q2"] and payload["validation"] is None
    assert sorted(q["risk_rank"] for q in payload["queries"]) == [1, 2]
    # with the golden set: bad fails q2 at k=2 (nothing relevant) and hits q1? no: d1 is at rank 3 -> both fail
    code, out, _ = run_cli(
        capsys,
        "risk",
        "--run",
        files / "good.trec",
        "--qrels",
        files / "qrels.tsv",
        "--k",
        "1",
        "--format",
        "json",
    )
    assert code == 0
    validation = json.loads(out)["validation"]
    # good hits both queries at k=1: no failing query, so the AUC is undefined (NaN -> null), never made up
    assert validation["n_failed"] == 0 and validation["auc"] is None


def test_detect_reports_the_queries_needed_from_the_observed_variance(capsys):
    import numpy as np

    from diagnose.stats import topic_set_size

    demo = __import__("pathlib").Path(__file__).resolve().parents[1] / "demo_corpus"
    code, out, _ = run_cli(
        capsys,
        "evaluate",
        "--data",
        demo,
        "--run",
        demo / "runs" / "ann_minilm.trec",
        "--run",
        demo / "runs" / "bm25_langchain.trec",
        "--metrics",
        "ndcg@10",
        "--per-query",
        "--detect",
        "0.05",
        "--format",
        "json",
    )
    assert code == 0
    payload = json.loads(out)
    (row,) = payload["queries_needed"]
    runs = payload["runs"]
    a = runs["ann_minilm"]["per_query"]
    b = runs["bm25_langchain"]["per_query"]
    d = np.array([b[q]["ndcg@10"] - a[q]["ndcg@10"] for q in a])
    qrels_lines = (demo / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    n_golden = len(
        {line.split("\t")[0] for line in qrels_lines if line.strip()}
    )  # every demo judgement is > 0
    # the sd of the per-query differences, and Sakai's n for it (itself checked against statsmodels in test_stats)
    assert row["sd_of_differences"] == pytest.approx(np.std(d, ddof=1))
    assert (
        row["queries_needed"] == topic_set_size(0.05, np.std(d, ddof=1))
        and row["queries"] == len(d) == n_golden
    )
    code, _, err = run_cli(
        capsys, "evaluate", "--data", demo, "--run", demo / "runs" / "ann_minilm.trec", "--detect", "0.05"
    )
    assert code == 2 and "--detect" in err


def test_bounds_reports_the_metrics_over_the_holes(capsys):
    """--bounds: per run and headline metric the value as reported (lower) and at best (upper), from
    diagnose.metrics.metric_bounds, and judged@k / hole@k from the metric registry."""
    from diagnose import load
    from diagnose.metrics import evaluate, metric_bounds

    demo = __import__("pathlib").Path(__file__).resolve().parents[1] / "demo_corpus"
    run_file = demo / "runs" / "ann_minilm.trec"
    code, out, _ = run_cli(
        capsys, "evaluate", "--data", demo, "--run", run_file, "--bounds", "--format", "json"
    )
    assert code == 0
    payload = json.loads(out)
    ds = load(demo, runs=[run_file])
    want = metric_bounds(ds.qrels, ds.runs["ann_minilm"], ["ndcg@10", "recall@10", "mrr"]).aggregate
    got = {(r["metric"]): r for r in payload["bounds"]}
    for m in ("ndcg@10", "recall@10", "mrr"):
        assert got[m]["lower"] == pytest.approx(want.loc[m, "lower"]) and got[m]["upper"] == pytest.approx(
            want.loc[m, "upper"]
        )
        assert got[m]["lower"] == pytest.approx(payload["runs"]["ann_minilm"]["aggregate"][m])
    cov = evaluate(ds.qrels, ds.runs["ann_minilm"], ["judged@10", "hole@10"]).aggregate
    assert payload["coverage"]["ann_minilm"] == pytest.approx(cov)


_EXIT_SCRIPT = """
import atexit, sys, threading
from diagnose.cli import entry

class Torn:
    def __del__(self):
        print("torn down", flush=True)

keep = Torn()
atexit.register(lambda: print("handler ran", flush=True))
done = threading.Event()
if sys.argv[1] == "thread":  # still running when the command ends, whatever its speed: it waits for the exit below
    threading.Thread(target=done.wait, args=(60,)).start()
if sys.argv[1] == "host":  # a host SystemExit returns to (IPython's %run -m diagnose)
    sys.modules["IPython"] = type(sys)("IPython")
sys.argv = ["diagnose", "evaluate", "--qrels", sys.argv[2], "--run", sys.argv[3], "--format", "json"]
try:
    entry()
finally:  # reached only when entry() exits normally (SystemExit); its fast exit ends the process before this
    done.set()
"""


@pytest.mark.parametrize("case", ["alone", "thread", "host", "bad input"])
def test_the_command_exits_without_teardown_once_its_output_and_atexit_handlers_are_done(files, case):
    """``entry`` (the console script) prints everything and runs the ``atexit`` handlers, then ends the process without
    the interpreter's teardown: an object still alive is not finalised. With another thread still running, or in a
    process that hosts the command (IPython), the exit is the normal one (Python waits for the thread, then tears
    down). The exit code is the command's."""
    import subprocess
    import sys

    qrels = str(files / "qrels.tsv") if case != "bad input" else str(files / "missing.tsv")
    run = f"good={files / 'good.trec'}"
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_SCRIPT, case if case in ("thread", "host") else "no", qrels, run],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == (2 if case == "bad input" else 0), done.stderr
    lines = done.stdout.splitlines()
    assert "handler ran" in lines
    assert ("torn down" in lines) == (case in ("thread", "host"))
    if case == "bad input":
        assert "missing.tsv" in done.stderr and "Traceback" not in done.stderr
    else:
        printed = done.stdout[: done.stdout.rindex("}") + 1]
        assert json.loads(printed)["runs"]["good"]["aggregate"]


_BLAS_SCRIPT = """
import importlib.abc, json, os, sys

seen = {}

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and name not in seen:
            seen[name] = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
        return None

sys.meta_path.insert(0, Watch())
import diagnose
light = "numpy" not in sys.modules
import diagnose.cli
print(json.dumps({"light": light, "at_numpy": seen.get("numpy")}))
"""


@pytest.mark.parametrize("user", [None, "28"])
def test_the_command_limits_openblas_spinning_before_numpy_loads(user):
    """``import diagnose`` loads no numpy, and ``diagnose.cli`` sets OpenBLAS's spin (``diagnose.cli.process``) before
    its own imports load it, so the setting takes effect; a value the user set is kept."""
    import os
    import subprocess
    import sys

    from diagnose.cli.process import BLAS_SPIN

    env = {k: v for k, v in os.environ.items() if k != BLAS_SPIN[0]}
    if user is not None:
        env[BLAS_SPIN[0]] = user
    done = subprocess.run(
        [sys.executable, "-c", _BLAS_SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"light": True, "at_numpy": user or BLAS_SPIN[1]}
